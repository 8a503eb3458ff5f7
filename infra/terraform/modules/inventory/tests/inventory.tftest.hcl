# Runs with `terraform test` and no provider.

variables {
  hosts = [
    { name = "orderer-0", role = "orderer" },
    { name = "kafka-0", role = "kafka" },
    { name = "kafka-1", role = "kafka" },
  ]
  addresses = {
    "orderer-0" = { public_ip = "198.51.100.10", private_ip = "10.0.1.10" }
    "kafka-0"   = { public_ip = "198.51.100.11", private_ip = "10.0.1.11" }
    "kafka-1"   = { public_ip = "198.51.100.12", private_ip = "10.0.1.12" }
  }
  ssh_user             = "ubuntu"
  ssh_private_key_file = "~/.ssh/repro"
  paper                = "fastfabric"
  extra_vars           = { upstream_variant = "fabric-1.2" }
}

run "groups_per_role" {
  command = plan

  assert {
    condition     = keys(output.inventory.all.children) == ["kafka", "orderer"]
    error_message = "One child group per role, sorted."
  }

  assert {
    condition     = output.inventory.all.children.kafka.hosts["kafka-1"].ansible_host == "198.51.100.12"
    error_message = "ansible_host is the public address."
  }

  assert {
    condition     = output.inventory.all.children.kafka.hosts["kafka-1"].private_ip == "10.0.1.12"
    error_message = "private_ip is kept for service binding."
  }

  assert {
    condition     = output.inventory.all.vars.upstream_variant == "fabric-1.2" && output.inventory.all.vars.upstream_provider == "aws"
    error_message = "extra_vars are merged into all.vars."
  }

  assert {
    condition     = yamldecode(output.yaml).all.children.orderer.hosts["orderer-0"].role == "orderer"
    error_message = "The YAML output decodes to the same inventory."
  }
}

run "missing_address_fails" {
  command = plan

  variables {
    addresses = {
      "orderer-0" = { public_ip = "198.51.100.10", private_ip = "10.0.1.10" }
    }
  }

  expect_failures = [terraform_data.check_addresses]
}
