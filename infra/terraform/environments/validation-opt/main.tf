# Javaid et al. (seed 002 line 66, 70): peers on 16 vCPU / 32 GB VMs, an 8 vCPU client VM, 1 Gbps network.

provider "aws" {
  region = var.region

  default_tags {
    tags = local.tags
  }
}

locals {
  tags = {
    Project = "fabric-repro"
    Paper   = "validation-opt"
  }
}

module "environment" {
  source = "../../modules/environment"

  paper = "validation-opt"
  roles = {
    peer      = 4
    orderer   = 2
    kafka     = 4
    zookeeper = 3
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
  extra_vars            = { upstream_variant = "validation-opt" }
  tags                  = local.tags
}
