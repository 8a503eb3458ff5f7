# One region's share of a cluster: a network (VPC, subnet, security group)
# and one instance per host in it. The single-region root has one of
# these; bftsmart-geo has one per region, each with its aliased provider.

module "network" {
  source = "../network"

  name              = var.name
  vpc_cidr          = var.vpc_cidr
  subnet_cidr       = cidrsubnet(var.vpc_cidr, 8, 1)
  availability_zone = var.availability_zone
  operator_cidrs    = var.operator_cidrs
  peer_cidrs        = var.peer_cidrs
  tags              = var.tags
}

module "cluster" {
  source = "../cluster"

  name               = var.name
  hosts              = var.hosts
  subnet_id          = module.network.subnet_id
  security_group_id  = module.network.security_group_id
  ssh_public_key     = var.ssh_public_key
  ami_id             = var.ami_id
  placement_strategy = var.placement_strategy
  tags               = var.tags
}
