# One region, one cluster placement group, the topology of one system: the
# system's variables (systems/<system>/terraform/single-region.tfvars.json:
# its paper's roles and instance types) plus the operator's inputs. The aws
# provider (harness/providers/aws.py) applies this root for a paper's system.

provider "aws" {
  region = var.region

  default_tags {
    tags = local.tags
  }
}

locals {
  tags = {
    Project = "fabric-repro"
    Paper   = var.paper
    System  = var.system
  }
}

module "environment" {
  source = "../../modules/environment"

  paper                 = var.paper
  roles                 = var.roles
  instance_types        = var.instance_types
  default_instance_type = var.default_instance_type
  region                = var.region
  availability_zone     = var.availability_zone
  operator_cidrs        = var.operator_cidrs
  ssh_public_key        = file(var.ssh_public_key_file)
  ssh_private_key_file  = var.ssh_private_key_file
  ami_id                = var.ami_id
  name                  = coalesce(var.name, "repro-${var.system}")
  extra_vars            = { upstream_variant = var.system }
  tags                  = local.tags
}
