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

module "topology" {
  source = "../../modules/topology"

  roles = {
    peer   = 4
    client = var.client_count
  }
  instance_types        = var.instance_types
  default_instance_type = var.default_instance_type
  default_region        = var.region
}

module "network" {
  source = "../../modules/network"

  name              = var.name
  availability_zone = var.availability_zone
  operator_cidrs    = var.operator_cidrs
  tags              = local.tags
}

module "cluster" {
  source = "../../modules/cluster"

  name              = var.name
  hosts             = module.topology.hosts_by_name
  subnet_id         = module.network.subnet_id
  security_group_id = module.network.security_group_id
  ssh_public_key    = file(var.ssh_public_key_file)
  ami_id            = var.ami_id
  tags              = local.tags
}

module "inventory" {
  source = "../../modules/inventory"

  hosts                = module.topology.hosts
  addresses            = module.cluster.addresses
  ssh_user             = "ubuntu"
  ssh_private_key_file = var.ssh_private_key_file
  paper                = "fujitsu"
  extra_vars           = { upstream_variant = "fujitsu-api" }
}
