output "hosts" {
  description = "Every host of the topology, ordered by role then index: objects with name (<role>-<i>), role, index, instance_type and region."
  value       = local.hosts
}

output "hosts_by_name" {
  description = "The same hosts keyed by name, for for_each in the cluster module."
  value       = local.hosts_by_name
}

output "host_count" {
  description = "Total number of hosts."
  value       = length(local.hosts)
}

output "roles" {
  description = "Role name -> list of host names of that role."
  value       = { for role in local.role_names : role => [for h in local.hosts : h.name if h.role == role] }
}
