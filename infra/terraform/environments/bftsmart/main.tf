# Sousa et al. (seed 004 lines 132, 143, 147): 4, 7 or 10 ordering nodes plus 2 client machines, Dell R410 (16 hardware threads, 32 GB), Gigabit Ethernet.

provider "aws" {
  region = var.region

  default_tags {
    tags = local.tags
  }
}

locals {
  tags = {
    Project = "fabric-repro"
    Paper   = "bftsmart"
  }
}

module "environment" {
  source = "../../modules/environment"

  paper = "bftsmart"
  roles = {
    bftsmart_node = var.node_count
    client        = 2
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
  extra_vars            = { upstream_variant = "bftsmart-orderer" }
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
