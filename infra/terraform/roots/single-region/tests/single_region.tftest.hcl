# Runs with `terraform test -var-file=<a system's variables>` (e.g.
# ../../../../systems/fastfabric/terraform/single-region.tfvars.json) against a
# mock aws provider: no AWS account and no network, but the hashicorp/aws
# provider must be installed for its schema. tests/infra/test_terraform.py runs
# it once per system. The system's variables come from that file; the
# operator's inputs from here.

mock_provider "aws" {
  source = "../../mocks/aws" # 198.51.100.7 / 10.42.1.7, image ami-0lookedup00000001
}

variables {
  operator_cidrs       = ["203.0.113.7/32"]
  ssh_public_key_file  = "tests/test_key.pub"
  ssh_private_key_file = "~/.ssh/repro"
}

run "plan_the_systems_topology" {
  command = plan

  assert {
    condition     = length(output.hosts) == sum(concat([0], values(var.roles)))
    error_message = "One host per unit of each role's count."
  }

  assert {
    condition     = toset(keys(output.instance_ids)) == toset([for h in output.hosts : h.name])
    error_message = "The cluster has exactly one instance per topology host."
  }

  assert {
    condition     = alltrue([for h in output.hosts : h.instance_type == lookup(var.instance_types, h.role, var.default_instance_type) && h.region == var.region])
    error_message = "Every host has its role's instance type (or the default) and the region."
  }
}

run "inventory_names_the_system" {
  command = apply

  assert {
    condition     = toset(keys(yamldecode(output.inventory_yaml).all.children)) == toset([for r, n in var.roles : r if n > 0])
    error_message = "One inventory group per role with hosts."
  }

  assert {
    condition     = yamldecode(output.inventory_yaml).all.vars.upstream_variant == var.system && yamldecode(output.inventory_yaml).all.vars.upstream_paper == var.paper
    error_message = "The inventory records the system and its paper."
  }
}

run "image_looked_up_unless_given" {
  command = apply

  assert {
    condition     = output.ami_id == "ami-0lookedup00000001"
    error_message = "Without ami_id the root's instances get the region's Ubuntu 24.04 LTS lookup."
  }
}
