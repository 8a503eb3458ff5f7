# One region's share of a cluster: a network (VPC, subnet, security group)
# and one instance per host in it. The single-region root has one of
# these; bftsmart-geo has one per region, each with its aliased provider.

# The image: the newest Ubuntu 24.04 LTS (noble) Canonical publishes in this
# region, unless the operator gives one. Python 3.12 on the hosts, which the
# pinned ansible-core (2.19: Python >= 3.8 on targets) needs; Ubuntu 18.04's 3.6
# fails its modules. Owner 099720109477 is Canonical's image account.
locals {
  lts_image_owner = "099720109477"
  lts_image_filters = {
    "name"                = "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*"
    "architecture"        = "x86_64"
    "virtualization-type" = "hvm"
    "root-device-type"    = "ebs"
  }
}

data "aws_ami" "lts" {
  count = var.ami_id == null && length(var.hosts) > 0 ? 1 : 0

  most_recent = true
  owners      = [local.lts_image_owner]

  dynamic "filter" {
    for_each = local.lts_image_filters
    content {
      name   = filter.key
      values = [filter.value]
    }
  }
}

locals {
  ami_id = var.ami_id != null ? var.ami_id : try(data.aws_ami.lts[0].id, "")
}

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
  ami_id             = local.ami_id
  placement_strategy = var.placement_strategy
  tags               = var.tags
}
