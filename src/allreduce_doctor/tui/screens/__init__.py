"""Full screens: probing, diagnosis, watch."""
