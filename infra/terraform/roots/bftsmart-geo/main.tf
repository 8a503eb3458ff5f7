# Sousa et al., geo-distributed experiment (seed 004 line 162): one host per
# region the experiment's topology names, all on the paper's m4.4xlarge. The
# paper's layout (papers/bftsmart-orderer.yaml fig7-geo-latency: oregon,
# virginia, ireland, sydney, sao_paulo, each running its region's replica and
# frontend) and the system's instance type are in
# systems/bftsmart-orderer/terraform/bftsmart-geo.tfvars.json; the aws provider
# passes the experiment's layout (roles, role_regions) over them.
#
# Terraform cannot for_each over provider configurations, so each region has
# its own provider alias and its own call of the region module (network,
# cluster and the region's Ubuntu 24.04 LTS image), made only where the layout
# has hosts; one topology and one inventory cover all regions.

locals {
  tags = {
    Project = "fabric-repro"
    Paper   = var.paper
    System  = var.system
    Layout  = "geo"
  }

  # Non-overlapping VPC ranges so addresses stay unambiguous in logs.
  vpc_cidrs = {
    "us-west-2"      = "10.51.0.0/16"
    "eu-west-1"      = "10.52.0.0/16"
    "ap-southeast-2" = "10.53.0.0/16"
    "sa-east-1"      = "10.54.0.0/16"
    "us-east-1"      = "10.55.0.0/16"
  }

  host_regions = { for name, h in module.topology.hosts_by_name : name => h.region }

  hosts_in = {
    for r in keys(local.vpc_cidrs) : r => { for k, h in module.topology.hosts_by_name : k => h if h.region == r }
  }

  ssh_public_key = file(var.ssh_public_key_file)

  addresses = merge(
    try(module.region_usw2[0].addresses, {}), try(module.region_euw1[0].addresses, {}),
    try(module.region_apse2[0].addresses, {}), try(module.region_sae1[0].addresses, {}),
    try(module.region_use1[0].addresses, {}),
  )

  # Hosts talk to each other over public addresses: each region admits the
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

  roles                 = var.roles
  default_instance_type = var.instance_type
  role_regions          = var.role_regions
}

# us-west-2 (Oregon): the leader's replica and a frontend in the paper
module "region_usw2" {
  source    = "../../modules/region"
  count     = length(local.hosts_in["us-west-2"]) > 0 ? 1 : 0
  providers = { aws = aws.usw2 }

  name               = "${var.name}-usw2"
  hosts              = local.hosts_in["us-west-2"]
  vpc_cidr           = local.vpc_cidrs["us-west-2"]
  availability_zone  = var.availability_zones["us-west-2"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["us-west-2"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = lookup(var.ami_ids, "us-west-2", null)
  placement_strategy = null # one host per region: nothing to co-locate
}

# eu-west-1 (Ireland): a replica
module "region_euw1" {
  source    = "../../modules/region"
  count     = length(local.hosts_in["eu-west-1"]) > 0 ? 1 : 0
  providers = { aws = aws.euw1 }

  name               = "${var.name}-euw1"
  hosts              = local.hosts_in["eu-west-1"]
  vpc_cidr           = local.vpc_cidrs["eu-west-1"]
  availability_zone  = var.availability_zones["eu-west-1"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["eu-west-1"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = lookup(var.ami_ids, "eu-west-1", null)
  placement_strategy = null
}

# ap-southeast-2 (Sydney): a replica
module "region_apse2" {
  source    = "../../modules/region"
  count     = length(local.hosts_in["ap-southeast-2"]) > 0 ? 1 : 0
  providers = { aws = aws.apse2 }

  name               = "${var.name}-apse2"
  hosts              = local.hosts_in["ap-southeast-2"]
  vpc_cidr           = local.vpc_cidrs["ap-southeast-2"]
  availability_zone  = var.availability_zones["ap-southeast-2"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["ap-southeast-2"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = lookup(var.ami_ids, "ap-southeast-2", null)
  placement_strategy = null
}

# sa-east-1 (Sao Paulo): a replica and a frontend
module "region_sae1" {
  source    = "../../modules/region"
  count     = length(local.hosts_in["sa-east-1"]) > 0 ? 1 : 0
  providers = { aws = aws.sae1 }

  name               = "${var.name}-sae1"
  hosts              = local.hosts_in["sa-east-1"]
  vpc_cidr           = local.vpc_cidrs["sa-east-1"]
  availability_zone  = var.availability_zones["sa-east-1"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["sa-east-1"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = lookup(var.ami_ids, "sa-east-1", null)
  placement_strategy = null
}

# us-east-1 (Virginia): WHEAT's extra replica and a frontend
module "region_use1" {
  source    = "../../modules/region"
  count     = length(local.hosts_in["us-east-1"]) > 0 ? 1 : 0
  providers = { aws = aws.use1 }

  name               = "${var.name}-use1"
  hosts              = local.hosts_in["us-east-1"]
  vpc_cidr           = local.vpc_cidrs["us-east-1"]
  availability_zone  = var.availability_zones["us-east-1"]
  operator_cidrs     = var.operator_cidrs
  peer_cidrs         = local.remote_cidrs["us-east-1"]
  ssh_public_key     = local.ssh_public_key
  ami_id             = lookup(var.ami_ids, "us-east-1", null)
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
