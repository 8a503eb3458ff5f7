output "inventory_yaml" {
  description = "Ansible inventory for playbooks/upstream; the aws provider writes it with `terraform output -raw inventory_yaml`."
  value       = module.inventory.yaml
}

output "hosts" {
  description = "Hosts of the topology (name, role, instance type)."
  value       = module.topology.hosts
}

output "instance_ids" {
  description = "Host name -> EC2 instance id."
  value       = module.cluster.instance_ids
}
