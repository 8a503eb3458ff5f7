output "inventory_yaml" {
  description = "Ansible inventory for playbooks/upstream (the inventory module's YAML)."
  value       = module.inventory.yaml
}

output "inventory" {
  description = "The same inventory as an object."
  value       = module.inventory.inventory
}

output "hosts" {
  description = "Hosts of the topology (name, role, index, instance type, region)."
  value       = module.topology.hosts
}

output "instance_ids" {
  description = "Host name -> EC2 instance id."
  value       = module.region.instance_ids
}

output "addresses" {
  description = "Host name -> { public_ip, private_ip }."
  value       = module.region.addresses
}

output "ami_id" {
  description = "The AMI the instances got."
  value       = module.region.ami_id
}
