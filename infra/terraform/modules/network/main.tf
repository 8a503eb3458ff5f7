resource "aws_vpc" "this" {
  cidr_block           = var.vpc_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true
  tags                 = merge(var.tags, { Name = var.name })
}

resource "aws_internet_gateway" "this" {
  vpc_id = aws_vpc.this.id
  tags   = merge(var.tags, { Name = var.name })
}

resource "aws_subnet" "this" {
  vpc_id                  = aws_vpc.this.id
  cidr_block              = var.subnet_cidr
  availability_zone       = var.availability_zone
  map_public_ip_on_launch = true # builds fetch sources from the internet
  tags                    = merge(var.tags, { Name = var.name })
}

resource "aws_route_table" "this" {
  vpc_id = aws_vpc.this.id

  route {
    cidr_block = "0.0.0.0/0" # egress only; ingress is governed by the security group
    gateway_id = aws_internet_gateway.this.id
  }

  tags = merge(var.tags, { Name = var.name })
}

resource "aws_route_table_association" "this" {
  subnet_id      = aws_subnet.this.id
  route_table_id = aws_route_table.this.id
}

resource "aws_security_group" "cluster" {
  name        = "${var.name}-cluster"
  description = "Reproduction cluster: operator access and traffic within the group only"
  vpc_id      = aws_vpc.this.id
  tags        = merge(var.tags, { Name = "${var.name}-cluster" })
}

# Every port between members: Fabric, Kafka, ZooKeeper and BFT-SMaRt use many
# ports and the papers ran on an isolated switch, so the group is the boundary.
resource "aws_vpc_security_group_ingress_rule" "within_group" {
  security_group_id            = aws_security_group.cluster.id
  referenced_security_group_id = aws_security_group.cluster.id
  ip_protocol                  = "-1"
  description                  = "all traffic between cluster members"
}

resource "aws_vpc_security_group_ingress_rule" "operator" {
  for_each = { for pair in setproduct(var.operator_cidrs, var.operator_ports) : "${pair[0]}:${pair[1]}" => pair }

  security_group_id = aws_security_group.cluster.id
  cidr_ipv4         = each.value[0]
  from_port         = each.value[1]
  to_port           = each.value[1]
  ip_protocol       = "tcp"
  description       = "operator access"
}

resource "aws_vpc_security_group_ingress_rule" "peer_regions" {
  for_each = var.peer_cidrs

  security_group_id = aws_security_group.cluster.id
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
  description       = "geo replica or frontend in another region"
}

resource "aws_vpc_security_group_egress_rule" "all" {
  security_group_id = aws_security_group.cluster.id
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "-1"
  description       = "builds download toolchains and sources"
}
