"""The EncryptionConfiguration `make run` encrypts Secrets at rest with when
STRATA_ENCRYPTION_CONFIG names none: kube's file format, for secrets only,
secretbox with one generated 32-byte key, then identity (Secrets written
before it existed stay readable, and are encrypted when next written or by
`strata storage reencrypt`). secretbox because kube's documentation rates it
strong and fast, where aescbc is open to padding-oracle attacks and aesgcm
wants a key rotated every 200k writes. The file is made once, readable by its
owner only, and kept: its key is what every stored Secret needs."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from strata import tls

PROVIDER = "secretbox"
KEY_NAME = "key1"

_TEMPLATE = """\
# Made by `make run`: Secrets are encrypted at rest with the first key below.
# To rotate it, see "Encryption at rest" in README.md.
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - {provider}:
          keys:
            - name: {name}
              secret: {secret}
      - identity: {{}}
"""


def ensure_encryption_config(path: Path) -> Path:
    """path, holding a configuration with a fresh key unless it is there."""
    if not path.exists():
        secret = base64.b64encode(secrets.token_bytes(32)).decode()
        text = _TEMPLATE.format(provider=PROVIDER, name=KEY_NAME, secret=secret)
        # Written whole under another name first: a start killed halfway
        # leaves no file with half a key for the next one to keep.
        partial = path.with_name(f"{path.name}.partial")
        tls.write_private(partial, text.encode())
        os.replace(partial, path)
    return path
