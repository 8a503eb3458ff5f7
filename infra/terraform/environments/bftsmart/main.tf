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
