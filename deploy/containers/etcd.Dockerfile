# A stand-in for quay.io/coreos/etcd where no registry can be reached: the etcd
# binary `make run` fetched (the build context is the folder holding it); it
# runs as root, as the upstream image does.
ARG BASE_IMAGE=local/debian:bookworm
FROM ${BASE_IMAGE}
COPY etcd /usr/local/bin/etcd
