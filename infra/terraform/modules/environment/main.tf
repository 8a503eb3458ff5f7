# A single-region paper environment: topology -> region (network + cluster)
# -> inventory. The root ../../roots/single-region configures the aws
# provider and calls this module with a system's roles.

module "topology" {
  source = "../topology"

  roles                 = var.roles
  instance_types        = var.instance_types
  default_instance_type = var.default_instance_type
  default_region        = var.region
}

module "region" {
  source = "../region"

  name              = var.name
  hosts             = module.topology.hosts_by_name
  availability_zone = var.availability_zone
  operator_cidrs    = var.operator_cidrs
  ssh_public_key    = var.ssh_public_key
  ami_id            = var.ami_id
  tags              = var.tags
}

module "inventory" {
  source = "../inventory"

  hosts                = module.topology.hosts
  addresses            = module.region.addresses
  ssh_user             = var.ssh_user
  ssh_private_key_file = var.ssh_private_key_file
  paper                = var.paper
  extra_vars           = var.extra_vars
}
