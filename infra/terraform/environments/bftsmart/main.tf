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

module "topology" {
  source = "../../modules/topology"

  roles = {
    bftsmart_node = var.node_count
    client        = 2
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
  paper                = "bftsmart"
  extra_vars           = { upstream_variant = "bftsmart-orderer" }
}
