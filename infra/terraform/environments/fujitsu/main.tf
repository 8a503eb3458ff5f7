# Miyamae et al. (seed 003 line 122): four peers, 2x 18-core Xeon E5-2695 v4, 128 GB, 1GbE.

provider "aws" {
  region = var.region

  default_tags {
    tags = local.tags
  }
}

locals {
  tags = {
    Project = "fabric-repro"
    Paper   = "fujitsu"
  }
}

module "environment" {
  source = "../../modules/environment"

  paper = "fujitsu"
  roles = {
    peer   = 4
    client = var.client_count
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
  extra_vars            = { upstream_variant = "fujitsu-api" }
  tags                  = local.tags
}
