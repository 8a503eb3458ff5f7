output "inventory_yaml" {
  description = "Ansible inventory for the playbooks; the aws provider writes it from `terraform output -json`."
  value       = module.inventory.yaml
}

output "hosts" {
  description = "Hosts with their regions."
  value       = module.topology.hosts
}

output "ami_ids" {
  description = "Region -> the AMI its instances got (the operator's, or the region's Ubuntu 24.04 LTS image looked up); only regions with hosts."
  value = merge(
    { for m in module.region_usw2 : "us-west-2" => m.ami_id }, { for m in module.region_euw1 : "eu-west-1" => m.ami_id },
    { for m in module.region_apse2 : "ap-southeast-2" => m.ami_id }, { for m in module.region_sae1 : "sa-east-1" => m.ami_id },
    { for m in module.region_use1 : "us-east-1" => m.ami_id },
  )
}
