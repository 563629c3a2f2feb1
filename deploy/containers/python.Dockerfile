# A stand-in for python:3.11-slim where no registry can be reached: Debian's
# Python 3.11 in a venv first on PATH (so that pip installs work in builds).
ARG BASE_IMAGE=local/debian:bookworm
FROM ${BASE_IMAGE}
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates \
    && update-ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/python
ENV PATH=/opt/python/bin:$PATH
