# Runs with `terraform test
# -var-file=../../../../systems/bftsmart-orderer/terraform/bftsmart-geo.tfvars.json`
# (the system's variables) against mock aws providers (one per region alias):
# no AWS account and no network, but the hashicorp/aws provider must be
# installed for its schema. Planning at all is the first check: the
# cross-region ingress rules must be keyed by something known before apply.

mock_provider "aws" {
  alias = "usw2"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.1", private_ip = "10.51.1.10" }
  }
}

mock_provider "aws" {
  alias = "euw1"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.2", private_ip = "10.52.1.10" }
  }
}

mock_provider "aws" {
  alias = "apse2"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.3", private_ip = "10.53.1.10" }
  }
}

mock_provider "aws" {
  alias = "sae1"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.4", private_ip = "10.54.1.10" }
  }
}

mock_provider "aws" {
  alias = "use1"
  mock_resource "aws_instance" {
    defaults = { public_ip = "198.51.100.5", private_ip = "10.55.1.10" }
  }
}

variables {
  operator_cidrs       = ["203.0.113.7/32"]
  ssh_public_key_file  = "tests/test_key.pub"
  ssh_private_key_file = "~/.ssh/repro"
  ami_ids = {
    "us-west-2"      = "ami-00000000000000001"
    "eu-west-1"      = "ami-00000000000000002"
    "ap-southeast-2" = "ami-00000000000000003"
    "sa-east-1"      = "ami-00000000000000004"
    "us-east-1"      = "ami-00000000000000005"
  }
}

run "plan_wheat" {
  command = plan

  assert {
    condition     = { for h in output.hosts : h.name => h.region } == { "bftsmart_node-0" = "us-west-2", "bftsmart_node-1" = "eu-west-1", "bftsmart_node-2" = "ap-southeast-2", "bftsmart_node-3" = "sa-east-1", "bftsmart_node-4" = "us-east-1", "frontend-0" = "us-west-2", "frontend-1" = "us-east-1", "frontend-2" = "sa-east-1" }
    error_message = "Replicas and frontends are in the paper's regions (seed 004 line 162)."
  }

  assert {
    condition     = toset(keys(module.region_usw2.instance_ids)) == toset(["bftsmart_node-0", "frontend-0"]) && toset(keys(module.region_use1.instance_ids)) == toset(["bftsmart_node-4", "frontend-1"])
    error_message = "Each region creates exactly its own hosts."
  }

  assert {
    condition     = toset(keys(local.remote_cidrs["us-west-2"])) == toset(["bftsmart_node-1", "bftsmart_node-2", "bftsmart_node-3", "bftsmart_node-4", "frontend-1", "frontend-2"])
    error_message = "A region admits every host of the other regions and none of its own."
  }
}

run "apply_inventory" {
  command = apply

  assert {
    condition     = yamldecode(output.inventory_yaml).all.children.bftsmart_node.hosts["bftsmart_node-1"].ansible_host == "198.51.100.2" && yamldecode(output.inventory_yaml).all.vars.upstream_layout == "geo" && yamldecode(output.inventory_yaml).all.vars.upstream_variant == var.system
    error_message = "The inventory has every region's addresses, the geo layout and the system."
  }

  assert {
    condition     = local.remote_cidrs["eu-west-1"]["bftsmart_node-0"] == "198.51.100.1/32" && !contains(keys(local.remote_cidrs["eu-west-1"]), "bftsmart_node-1")
    error_message = "Remote hosts are admitted as /32s of their public addresses."
  }
}

run "plan_without_wheat" {
  command = plan

  variables {
    wheat = false
  }

  assert {
    condition     = length(output.hosts) == 7 && toset(keys(module.region_use1.instance_ids)) == toset(["frontend-1"])
    error_message = "wheat = false drops the Virginia replica and keeps frontend 1."
  }
}
