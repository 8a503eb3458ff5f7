terraform {
  # Provider-free: renders text only. The root outputs it; the aws provider writes it to disk.
  required_version = ">= 1.6.0"
}
