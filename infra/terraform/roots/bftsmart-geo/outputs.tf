output "inventory_yaml" {
  description = "Ansible inventory for playbooks/upstream; the aws provider writes it with `terraform output -raw inventory_yaml`."
  value       = module.inventory.yaml
}

output "hosts" {
  description = "Hosts with their regions."
  value       = module.topology.hosts
}
