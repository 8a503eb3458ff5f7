output "inventory_yaml" {
  description = "Ansible inventory for the playbooks; the aws provider writes it with `terraform output -raw inventory_yaml`."
  value       = module.environment.inventory_yaml
}

output "hosts" {
  description = "Hosts of the topology (name, role, instance type)."
  value       = module.environment.hosts
}

output "instance_ids" {
  description = "Host name -> EC2 instance id."
  value       = module.environment.instance_ids
}

output "ami_id" {
  description = "The AMI the instances got (the operator's, or the Ubuntu 24.04 LTS image looked up)."
  value       = module.environment.ami_id
}
