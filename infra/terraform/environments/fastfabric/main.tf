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
