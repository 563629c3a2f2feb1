"""The controllers the registry runs while it leads (namespace lifecycle,
garbage collection, CRD naming and cleanup, ClusterRole aggregation, default
ServiceAccounts, the kubernetes Service, allocation repair) and its startup
bootstrap, with what they share: the leader election, the informers over the
Registry API (informed.py) and the round loop (rounds.py). The generic Store
never imports them; they are its clients.
"""
