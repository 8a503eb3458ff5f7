# Runs with `terraform test` against a mock aws provider: no AWS account and no
# network, but the hashicorp/aws provider must be installed for its schema
# (`terraform init -plugin-dir=<mirror>`; tests/infra/test_terraform.py skips
# this when no mirror is found).

mock_provider "aws" {
  source = "../../mocks/aws" # 198.51.100.7 / 10.42.1.7, image ami-0lookedup00000001
}

variables {
  paper                 = "fastfabric"
  roles                 = { orderer = 1, kafka = 3, client = 1, storage = 0 }
  instance_types        = { client = "c5.2xlarge" }
  default_instance_type = "c5.9xlarge"
  region                = "us-east-1"
  availability_zone     = "us-east-1a"
  operator_cidrs        = ["203.0.113.7/32"]
  ssh_public_key        = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKEFAKEFAKEFAKE repro-test"
  ssh_private_key_file  = "~/.ssh/repro"
  name                  = "repro-test"
  extra_vars            = { upstream_variant = "fastfabric" }
}

run "plan_one_instance_per_host" {
  command = plan

  assert {
    condition     = [for h in output.hosts : h.name] == ["client-0", "kafka-0", "kafka-1", "kafka-2", "orderer-0"]
    error_message = "Hosts are the topology's <role>-<i>, ordered by role then index."
  }

  assert {
    condition     = toset(keys(output.instance_ids)) == toset(["client-0", "kafka-0", "kafka-1", "kafka-2", "orderer-0"])
    error_message = "The cluster has exactly one instance per topology host."
  }

  assert {
    condition     = alltrue([for h in output.hosts : h.region == "us-east-1"]) && [for h in output.hosts : h.instance_type if h.role == "client"] == ["c5.2xlarge"]
    error_message = "Hosts carry the region and the per-role instance types."
  }
}

run "inventory_from_cluster_addresses" {
  command = apply

  assert {
    condition     = keys(yamldecode(output.inventory_yaml).all.children) == ["client", "kafka", "orderer"]
    error_message = "One inventory group per role with hosts."
  }

  assert {
    condition     = yamldecode(output.inventory_yaml).all.children.kafka.hosts["kafka-2"].ansible_host == "198.51.100.7" && output.inventory.all.children.kafka.hosts["kafka-2"].private_ip == "10.42.1.7"
    error_message = "The inventory takes each host's addresses from the cluster."
  }

  assert {
    condition     = output.inventory.all.vars.upstream_paper == "fastfabric" && output.inventory.all.vars.upstream_variant == "fastfabric" && output.inventory.all.vars.ansible_user == "ubuntu"
    error_message = "paper, extra_vars and ssh_user reach the inventory's all.vars."
  }

  assert {
    condition     = length(output.addresses) == 5 && length(output.instance_ids) == 5
    error_message = "Every host has an address and an instance id."
  }

  assert {
    condition     = output.ami_id == "ami-0lookedup00000001"
    error_message = "Without ami_id, the instances get the image the region module looked up (Ubuntu 24.04 LTS)."
  }
}

run "operator_image_wins" {
  command = plan

  variables {
    ami_id = "ami-0123456789abcdef0"
  }

  assert {
    condition     = output.ami_id == "ami-0123456789abcdef0" && length(module.region.ami_id) > 0
    error_message = "An ami_id given is the one used (no lookup)."
  }
}
