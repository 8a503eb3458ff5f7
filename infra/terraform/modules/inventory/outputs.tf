output "yaml" {
  description = "The Ansible YAML inventory: group all with one child group per role, hosts named <role>-<i>."
  value       = yamlencode(local.inventory)
}

output "inventory" {
  description = "The same inventory as an object (for tests and for other modules)."
  value       = local.inventory
}
