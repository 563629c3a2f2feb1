"""strata's four services; each talks to the others only through protos/."""
