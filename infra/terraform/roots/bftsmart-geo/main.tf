# Sousa et al., geo-distributed experiment (seed 004 line 162): BFT-SMaRt
# replicas in Oregon, Ireland, Sydney and Sao Paulo, WHEAT's additional replica
# in Virginia, and three frontends in Oregon (with the leader), Virginia and
# Sao Paulo, all on the paper's m4.4xlarge. The system's variables are in
# systems/bftsmart-orderer/terraform/bftsmart-geo.tfvars.json.
#
# Terraform cannot for_each over provider configurations, so each region has
# its own provider alias and its own call of the region module (network and
# cluster); one topology and one inventory cover all regions.

locals {
  tags = {
    Project = "fabric-repro"
    Paper   = var.paper
    System  = var.system
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

  ssh_public_key = file(var.ssh_public_key_file)

  addresses = merge(
    module.region_usw2.addresses, module.region_euw1.addresses, module.region_apse2.addresses,
    module.region_sae1.addresses, module.region_use1.addresses,
  )

  # Replicas talk to each other over public addresses: each region admits the
  # other regions' hosts, one /32 each, and nothing else beyond the operator.
  # Keyed by host name, which is known at plan time (the addresses are not).
  remote_cidrs = {
    for r in keys(local.vpc_cidrs) : r => {
      for name, hr in local.host_regions : name => "${local.addresses[name].public_ip}/32" if hr != r
    }
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

# us-west-2 (Oregon): leader replica 0 and frontend 0
module "region_usw2" {
  source    = "../../modules/region"
  providers = { aws = aws.usw2 }

  name               = "${var.name}-usw2"
  hosts              = local.hosts_in["us-west-2"]
  vpc_cidr           = local.vpc_cidrs["us-west-2"]
  availability_zone  = var.availability_zones["us-west-2"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["us-west-2"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = var.ami_ids["us-west-2"]
  placement_strategy = null # one or two hosts per region: nothing to co-locate
}

# eu-west-1 (Ireland): replica 1
module "region_euw1" {
  source    = "../../modules/region"
  providers = { aws = aws.euw1 }

  name               = "${var.name}-euw1"
  hosts              = local.hosts_in["eu-west-1"]
  vpc_cidr           = local.vpc_cidrs["eu-west-1"]
  availability_zone  = var.availability_zones["eu-west-1"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["eu-west-1"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = var.ami_ids["eu-west-1"]
  placement_strategy = null
}

# ap-southeast-2 (Sydney): replica 2
module "region_apse2" {
  source    = "../../modules/region"
  providers = { aws = aws.apse2 }

  name               = "${var.name}-apse2"
  hosts              = local.hosts_in["ap-southeast-2"]
  vpc_cidr           = local.vpc_cidrs["ap-southeast-2"]
  availability_zone  = var.availability_zones["ap-southeast-2"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["ap-southeast-2"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = var.ami_ids["ap-southeast-2"]
  placement_strategy = null
}

# sa-east-1 (Sao Paulo): replica 3 and frontend 2
module "region_sae1" {
  source    = "../../modules/region"
  providers = { aws = aws.sae1 }

  name               = "${var.name}-sae1"
  hosts              = local.hosts_in["sa-east-1"]
  vpc_cidr           = local.vpc_cidrs["sa-east-1"]
  availability_zone  = var.availability_zones["sa-east-1"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["sa-east-1"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = var.ami_ids["sa-east-1"]
  placement_strategy = null
}

# us-east-1 (Virginia): WHEAT's extra replica 4 and frontend 1
module "region_use1" {
  source    = "../../modules/region"
  providers = { aws = aws.use1 }

  name               = "${var.name}-use1"
  hosts              = local.hosts_in["us-east-1"]
  vpc_cidr           = local.vpc_cidrs["us-east-1"]
  availability_zone  = var.availability_zones["us-east-1"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["us-east-1"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = var.ami_ids["us-east-1"]
  placement_strategy = null
}

module "inventory" {
  source = "../../modules/inventory"

  hosts                = module.topology.hosts
  addresses            = local.addresses
  ssh_user             = "ubuntu"
  ssh_private_key_file = var.ssh_private_key_file
  paper                = var.paper
  extra_vars           = { upstream_variant = var.system, upstream_layout = "geo" }
}
