# Sousa et al., geo-distributed experiment (seed 004 line 162): BFT-SMaRt
# replicas in Oregon, Ireland, Sydney and Sao Paulo, WHEAT's additional replica
# in Virginia, and three frontends in Oregon (with the leader), Virginia and
# Sao Paulo, all on m4.4xlarge.
#
# Terraform cannot for_each over provider configurations, so each region has
# its own provider alias and its own network/cluster module call.

locals {
  tags = {
    Project = "fabric-repro"
    Paper   = "bftsmart"
    Layout  = "geo"
  }

  node_regions = concat(
    ["us-west-2", "eu-west-1", "ap-southeast-2", "sa-east-1"],
    var.wheat ? ["us-east-1"] : []
  )
  frontend_regions = ["us-west-2", "us-east-1", "sa-east-1"]

  host_regions = merge(
    { for i, r in local.node_regions : "bftsmart_node-${i}" => r },
    { for i, r in local.frontend_regions : "frontend-${i}" => r },
  )

  # Non-overlapping VPC ranges so addresses stay unambiguous in logs.
  vpc_cidrs = {
    "us-west-2"      = "10.51.0.0/16"
    "eu-west-1"      = "10.52.0.0/16"
    "ap-southeast-2" = "10.53.0.0/16"
    "sa-east-1"      = "10.54.0.0/16"
    "us-east-1"      = "10.55.0.0/16"
  }

  hosts_in = {
    for r in keys(local.vpc_cidrs) : r => { for k, h in module.topology.hosts_by_name : k => h if h.region == r }
  }

  addresses = merge(
    module.cluster_usw2.addresses, module.cluster_euw1.addresses, module.cluster_apse2.addresses,
    module.cluster_sae1.addresses, module.cluster_use1.addresses,
  )

  # Replicas talk to each other over public addresses: each region admits the
  # other regions' hosts, one /32 each, and nothing else beyond the operator.
  remote_ips = {
    for r in keys(local.vpc_cidrs) : r => toset([
      for name, a in local.addresses : "${a.public_ip}/32" if local.host_regions[name] != r
    ])
  }
}

provider "aws" {
  alias  = "usw2"
  region = "us-west-2"
  default_tags { tags = local.tags }
}

provider "aws" {
  alias  = "euw1"
  region = "eu-west-1"
  default_tags { tags = local.tags }
}

provider "aws" {
  alias  = "apse2"
  region = "ap-southeast-2"
  default_tags { tags = local.tags }
}

provider "aws" {
  alias  = "sae1"
  region = "sa-east-1"
  default_tags { tags = local.tags }
}

provider "aws" {
  alias  = "use1"
  region = "us-east-1"
  default_tags { tags = local.tags }
}

module "topology" {
  source = "../../modules/topology"

  roles = {
    bftsmart_node = length(local.node_regions)
    frontend      = length(local.frontend_regions)
  }
  default_instance_type = var.instance_type
  regions               = local.host_regions
}

# ---- us-west-2 (Oregon): leader replica 0 and frontend 0 ----
module "network_usw2" {
  source    = "../../modules/network"
  providers = { aws = aws.usw2 }

  name              = "${var.name}-usw2"
  vpc_cidr          = local.vpc_cidrs["us-west-2"]
  subnet_cidr       = cidrsubnet(local.vpc_cidrs["us-west-2"], 8, 1)
  availability_zone = var.availability_zones["us-west-2"]
  operator_cidrs    = var.operator_cidrs
}

module "cluster_usw2" {
  source    = "../../modules/cluster"
  providers = { aws = aws.usw2 }

  name               = "${var.name}-usw2"
  hosts              = local.hosts_in["us-west-2"]
  subnet_id          = module.network_usw2.subnet_id
  security_group_id  = module.network_usw2.security_group_id
  ssh_public_key     = file(var.ssh_public_key_file)
  ami_id             = var.ami_ids["us-west-2"]
  placement_strategy = null # one or two hosts per region: nothing to co-locate
}

resource "aws_vpc_security_group_ingress_rule" "remote_usw2" {
  provider          = aws.usw2
  for_each          = local.remote_ips["us-west-2"]
  security_group_id = module.network_usw2.security_group_id
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
  description       = "geo replica or frontend in another region"
}

# ---- eu-west-1 (Ireland) ----
module "network_euw1" {
  source    = "../../modules/network"
  providers = { aws = aws.euw1 }

  name              = "${var.name}-euw1"
  vpc_cidr          = local.vpc_cidrs["eu-west-1"]
  subnet_cidr       = cidrsubnet(local.vpc_cidrs["eu-west-1"], 8, 1)
  availability_zone = var.availability_zones["eu-west-1"]
  operator_cidrs    = var.operator_cidrs
}

module "cluster_euw1" {
  source    = "../../modules/cluster"
  providers = { aws = aws.euw1 }

  name               = "${var.name}-euw1"
  hosts              = local.hosts_in["eu-west-1"]
  subnet_id          = module.network_euw1.subnet_id
  security_group_id  = module.network_euw1.security_group_id
  ssh_public_key     = file(var.ssh_public_key_file)
  ami_id             = var.ami_ids["eu-west-1"]
  placement_strategy = null
}

resource "aws_vpc_security_group_ingress_rule" "remote_euw1" {
  provider          = aws.euw1
  for_each          = local.remote_ips["eu-west-1"]
  security_group_id = module.network_euw1.security_group_id
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
  description       = "geo replica or frontend in another region"
}

# ---- ap-southeast-2 (Sydney) ----
module "network_apse2" {
  source    = "../../modules/network"
  providers = { aws = aws.apse2 }

  name              = "${var.name}-apse2"
  vpc_cidr          = local.vpc_cidrs["ap-southeast-2"]
  subnet_cidr       = cidrsubnet(local.vpc_cidrs["ap-southeast-2"], 8, 1)
  availability_zone = var.availability_zones["ap-southeast-2"]
  operator_cidrs    = var.operator_cidrs
}

module "cluster_apse2" {
  source    = "../../modules/cluster"
  providers = { aws = aws.apse2 }

  name               = "${var.name}-apse2"
  hosts              = local.hosts_in["ap-southeast-2"]
  subnet_id          = module.network_apse2.subnet_id
  security_group_id  = module.network_apse2.security_group_id
  ssh_public_key     = file(var.ssh_public_key_file)
  ami_id             = var.ami_ids["ap-southeast-2"]
  placement_strategy = null
}

resource "aws_vpc_security_group_ingress_rule" "remote_apse2" {
  provider          = aws.apse2
  for_each          = local.remote_ips["ap-southeast-2"]
  security_group_id = module.network_apse2.security_group_id
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
  description       = "geo replica or frontend in another region"
}

# ---- sa-east-1 (Sao Paulo) ----
module "network_sae1" {
  source    = "../../modules/network"
  providers = { aws = aws.sae1 }

  name              = "${var.name}-sae1"
  vpc_cidr          = local.vpc_cidrs["sa-east-1"]
  subnet_cidr       = cidrsubnet(local.vpc_cidrs["sa-east-1"], 8, 1)
  availability_zone = var.availability_zones["sa-east-1"]
  operator_cidrs    = var.operator_cidrs
}

module "cluster_sae1" {
  source    = "../../modules/cluster"
  providers = { aws = aws.sae1 }

  name               = "${var.name}-sae1"
  hosts              = local.hosts_in["sa-east-1"]
  subnet_id          = module.network_sae1.subnet_id
  security_group_id  = module.network_sae1.security_group_id
  ssh_public_key     = file(var.ssh_public_key_file)
  ami_id             = var.ami_ids["sa-east-1"]
  placement_strategy = null
}

resource "aws_vpc_security_group_ingress_rule" "remote_sae1" {
  provider          = aws.sae1
  for_each          = local.remote_ips["sa-east-1"]
  security_group_id = module.network_sae1.security_group_id
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
  description       = "geo replica or frontend in another region"
}

# ---- us-east-1 (Virginia): WHEAT's extra replica and frontend 1 ----
module "network_use1" {
  source    = "../../modules/network"
  providers = { aws = aws.use1 }

  name              = "${var.name}-use1"
  vpc_cidr          = local.vpc_cidrs["us-east-1"]
  subnet_cidr       = cidrsubnet(local.vpc_cidrs["us-east-1"], 8, 1)
  availability_zone = var.availability_zones["us-east-1"]
  operator_cidrs    = var.operator_cidrs
}

module "cluster_use1" {
  source    = "../../modules/cluster"
  providers = { aws = aws.use1 }

  name               = "${var.name}-use1"
  hosts              = local.hosts_in["us-east-1"]
  subnet_id          = module.network_use1.subnet_id
  security_group_id  = module.network_use1.security_group_id
  ssh_public_key     = file(var.ssh_public_key_file)
  ami_id             = var.ami_ids["us-east-1"]
  placement_strategy = null
}

resource "aws_vpc_security_group_ingress_rule" "remote_use1" {
  provider          = aws.use1
  for_each          = local.remote_ips["us-east-1"]
  security_group_id = module.network_use1.security_group_id
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
  description       = "geo replica or frontend in another region"
}

module "inventory" {
  source = "../../modules/inventory"

  hosts                = module.topology.hosts
  addresses            = local.addresses
  ssh_user             = "ubuntu"
  ssh_private_key_file = var.ssh_private_key_file
  paper                = "bftsmart"
  extra_vars           = { upstream_variant = "bftsmart-orderer", upstream_layout = "geo" }
}
