# Runs with `terraform test
# -var-file=../../../../systems/bftsmart-orderer/terraform/bftsmart-geo.tfvars.json`
# (the system's variables: the paper's layout, one host per region) against
# mock aws providers (one per region alias): no AWS account and no network, but
# the hashicorp/aws provider must be installed for its schema. Planning at all
# is the first check: the cross-region ingress rules must be keyed by something
# known before apply.

mock_provider "aws" {
  alias = "usw2"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.1", private_ip = "10.51.1.10" }
  }
  mock_data "aws_ami" {
    defaults = { id = "ami-0000000000000usw2" }
  }
}

mock_provider "aws" {
  alias = "euw1"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.2", private_ip = "10.52.1.10" }
  }
  mock_data "aws_ami" {
    defaults = { id = "ami-0000000000000euw1" }
  }
}

mock_provider "aws" {
  alias = "apse2"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.3", private_ip = "10.53.1.10" }
  }
  mock_data "aws_ami" {
    defaults = { id = "ami-000000000000apse2" }
  }
}

mock_provider "aws" {
  alias = "sae1"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.4", private_ip = "10.54.1.10" }
  }
  mock_data "aws_ami" {
    defaults = { id = "ami-0000000000000sae1" }
  }
}

mock_provider "aws" {
  alias = "use1"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.5", private_ip = "10.55.1.10" }
  }
  mock_data "aws_ami" {
    defaults = { id = "ami-0000000000000use1" }
  }
}

variables {
  operator_cidrs       = ["203.0.113.7/32"]
  ssh_public_key_file  = "tests/test_key.pub"
  ssh_private_key_file = "~/.ssh/repro"
}

run "plan_one_host_per_region" {
  command = plan

  assert {
    condition     = { for h in output.hosts : h.name => h.region } == { "oregon-0" = "us-west-2", "virginia-0" = "us-east-1", "ireland-0" = "eu-west-1", "sydney-0" = "ap-southeast-2", "sao_paulo-0" = "sa-east-1" }
    error_message = "One host per region the layout names, in its region (seed 004 line 162)."
  }

  assert {
    condition     = toset(keys(module.region_usw2[0].instance_ids)) == toset(["oregon-0"]) && toset(keys(module.region_use1[0].instance_ids)) == toset(["virginia-0"])
    error_message = "Each region creates exactly its own hosts."
  }

  assert {
    condition     = toset(keys(local.remote_cidrs["us-west-2"])) == toset(["virginia-0", "ireland-0", "sydney-0", "sao_paulo-0"])
    error_message = "A region admits every host of the other regions and none of its own."
  }

  assert {
    condition     = alltrue([for h in output.hosts : h.instance_type == "m4.4xlarge"])
    error_message = "Every host is the paper's m4.4xlarge."
  }
}

run "apply_inventory_and_images" {
  command = apply

  assert {
    condition     = yamldecode(output.inventory_yaml).all.children.ireland.hosts["ireland-0"].ansible_host == "198.51.100.2" && yamldecode(output.inventory_yaml).all.vars.upstream_layout == "geo" && yamldecode(output.inventory_yaml).all.vars.upstream_variant == var.system
    error_message = "The inventory has every region's addresses, the geo layout and the system."
  }

  assert {
    condition     = local.remote_cidrs["eu-west-1"]["oregon-0"] == "198.51.100.1/32" && !contains(keys(local.remote_cidrs["eu-west-1"]), "ireland-0")
    error_message = "Remote hosts are admitted as /32s of their public addresses."
  }

  assert {
    condition     = output.ami_ids == { "us-west-2" = "ami-0000000000000usw2", "eu-west-1" = "ami-0000000000000euw1", "ap-southeast-2" = "ami-000000000000apse2", "sa-east-1" = "ami-0000000000000sae1", "us-east-1" = "ami-0000000000000use1" }
    error_message = "Without ami_ids each region's instances get the image its lookup found."
  }
}

run "only_the_regions_the_layout_uses" {
  command = plan

  variables {
    roles   = { oregon = 1, ireland = 2 }
    ami_ids = { "eu-west-1" = "ami-0operator00000001" }
  }

  assert {
    condition     = length(output.hosts) == 3 && length(module.region_usw2) == 1 && length(module.region_euw1) == 1 && length(module.region_use1) == 0 && length(module.region_sae1) == 0 && length(module.region_apse2) == 0
    error_message = "A region without hosts gets no network, key pair or instance."
  }

  assert {
    condition     = toset(keys(module.region_euw1[0].instance_ids)) == toset(["ireland-0", "ireland-1"]) && module.region_euw1[0].ami_id == "ami-0operator00000001"
    error_message = "A role's several hosts are all in its region, on the operator's image where one is given."
  }
}
