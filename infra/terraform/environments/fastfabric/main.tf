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

module "topology" {
  source = "../../modules/topology"

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
  paper                = "fastfabric"
  extra_vars           = { upstream_variant = "fastfabric" }
}
