# Runs with `terraform test` and no provider: the module is pure locals.

run "fastfabric_fifteen_servers" {
  command = plan

  variables {
    roles = {
      orderer   = 1
      zookeeper = 3
      kafka     = 3
      peer      = 1
      storage   = 1
      endorser  = 5
      client    = 1
    }
    instance_types        = { client = "c5.4xlarge" }
    default_instance_type = "m5.12xlarge"
  }

  assert {
    condition     = output.host_count == 15
    error_message = "FastFabric's topology has 15 servers (seed 000 line 259)."
  }

  assert {
    condition     = output.roles["endorser"] == ["endorser-0", "endorser-1", "endorser-2", "endorser-3", "endorser-4"]
    error_message = "Hosts must be named <role>-<i> starting at 0."
  }

  assert {
    condition     = output.hosts_by_name["client-0"].instance_type == "c5.4xlarge" && output.hosts_by_name["kafka-2"].instance_type == "m5.12xlarge"
    error_message = "Per-role instance types must override the default."
  }

  assert {
    condition     = output.hosts[0].name == "client-0"
    error_message = "Hosts are ordered by sorted role name, then index."
  }
}

run "empty_role_yields_no_hosts" {
  command = plan

  variables {
    roles                 = { peer = 4, orderer = 0 }
    default_instance_type = "m5.4xlarge"
  }

  assert {
    condition     = output.host_count == 4 && length(output.roles["orderer"]) == 0
    error_message = "A role with count 0 has no hosts."
  }
}

run "geo_regions" {
  command = plan

  variables {
    roles                 = { bftsmart_node = 2 }
    default_instance_type = "m4.4xlarge"
    default_region        = "us-west-2"
    regions               = { "bftsmart_node-1" = "eu-west-1" }
  }

  assert {
    condition     = output.hosts_by_name["bftsmart_node-0"].region == "us-west-2" && output.hosts_by_name["bftsmart_node-1"].region == "eu-west-1"
    error_message = "Per-host regions override the default region."
  }
}

run "role_regions" {
  command = plan

  variables {
    roles                 = { oregon = 1, ireland = 2 }
    default_instance_type = "m4.4xlarge"
    role_regions          = { oregon = "us-west-2", ireland = "eu-west-1" }
    regions               = { "ireland-1" = "us-east-1" }
  }

  assert {
    condition     = { for h in output.hosts : h.name => h.region } == { "ireland-0" = "eu-west-1", "ireland-1" = "us-east-1", "oregon-0" = "us-west-2" }
    error_message = "A role's region applies to each of its hosts; a host's own entry in regions comes first."
  }
}

run "rejects_bad_role_name" {
  command = plan

  variables {
    roles                 = { "Bad-Role" = 1 }
    default_instance_type = "m5.large"
  }

  expect_failures = [var.roles]
}
