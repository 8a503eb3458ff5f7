# FastFabric (seed 000 line 175, 259): fifteen servers, 2x Xeon E5-2620 v2, 24 hardware threads, 64 GB; see ../../README.md for the choice of c5.9xlarge.

provider "aws" {
  region = var.region

  default_tags {
    tags = local.tags
  }
}

locals {
  tags = {
    Project = "fabric-repro"
    Paper   = "fastfabric"
  }
}

module "environment" {
  source = "../../modules/environment"

  paper = "fastfabric"
  roles = {
    orderer   = 1
    zookeeper = 3
    kafka     = 3
    peer      = 1
    storage   = 1
    endorser  = 5
    client    = 1
  }
  instance_types        = var.instance_types
  default_instance_type = var.default_instance_type
  region                = var.region
  availability_zone     = var.availability_zone
  operator_cidrs        = var.operator_cidrs
  ssh_public_key        = file(var.ssh_public_key_file)
  ssh_private_key_file  = var.ssh_private_key_file
  ami_id                = var.ami_id
  name                  = var.name
  extra_vars            = { upstream_variant = "fastfabric" }
  tags                  = local.tags
}

# Where these modules were called directly from this file before the shared
# environment module: state of a cluster created then moves instead of being
# destroyed and recreated.
moved {
  from = module.topology
  to   = module.environment.module.topology
}

moved {
  from = module.network
  to   = module.environment.module.region.module.network
}

moved {
  from = module.cluster
  to   = module.environment.module.region.module.cluster
}

moved {
  from = module.inventory
  to   = module.environment.module.inventory
}
