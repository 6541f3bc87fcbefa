#!/usr/bin/python3
"""A data-plane peer built on kosha_contract and boto3, for the interop test
(internal/pyinterop drives it with koshactl against moto and a Secrets
Manager fake). Each command prints one JSON object.

    peer.py override  --dependency D --now-ms N
    peer.py get       --pk PK
    peer.py put-item  --item JSON                      (a hand edit, as `aws dynamodb put-item`)
    peer.py take      --client C --now-ms N [--capacity C --refill R]
    peer.py status    --client C --now-ms N [--capacity C --refill R]
    peer.py verify    --secret-id ID --now S --value V

Connection settings come from the environment: KOSHA_DYNAMODB_ENDPOINT,
KOSHA_TABLE, KOSHA_SECRETSMANAGER_ENDPOINT, AWS_DEFAULT_REGION and dummy
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

from kosha_contract import bucket, chaos, override  # noqa: E402


def dynamodb() -> Any:
    return boto3.client("dynamodb", endpoint_url=os.environ["KOSHA_DYNAMODB_ENDPOINT"])


def get(pk: str) -> dict[str, Any] | None:
    out = dynamodb().get_item(TableName=os.environ["KOSHA_TABLE"], Key={"pk": {"S": pk}}, ConsistentRead=True)
    item: dict[str, Any] | None = out.get("Item")
    return item


def cmd_override(a: argparse.Namespace) -> dict[str, Any]:
    r = override.read_override(get(override.PREFIX + a.dependency), a.now_ms)
    return {"active": r.active, "treatment": r.treatment, "malformed_attributes": list(r.malformed_attributes),
            "expires_at_ms": r.expires_at_ms, "reason": r.reason}


def cmd_get(a: argparse.Namespace) -> dict[str, Any]:
    return {"item": get(a.pk)}


def cmd_put_item(a: argparse.Namespace) -> dict[str, Any]:
    item = json.loads(a.item)
    if "B" in json.dumps(item):  # binary values travel as base64 in JSON
        for v in item.values():
            if "B" in v:
                v["B"] = __import__("base64").b64decode(v["B"])
    dynamodb().put_item(TableName=os.environ["KOSHA_TABLE"], Item=item)
    return {"ok": True}


def limits(a: argparse.Namespace) -> bucket.Limits:
    return bucket.Limits(a.capacity, a.refill)


def cmd_take(a: argparse.Namespace) -> dict[str, Any]:
    """The race-free take with its retry loop: re-read on a refused write,
    at most MAX_CAS_RETRIES times, then refuse; a store error fails open."""
    client = dynamodb()
    for attempt in range(bucket.MAX_CAS_RETRIES + 1):
        try:
            r = bucket.take(get(bucket.PREFIX + a.client), a.now_ms, limits(a), a.client)
            if r.write is not None:
                kw: dict[str, Any] = {"ConditionExpression": r.write.condition.expression}
                if r.write.condition.values:
                    kw["ExpressionAttributeValues"] = r.write.condition.values
                client.put_item(TableName=os.environ["KOSHA_TABLE"], Item=r.write.item, **kw)
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            return {"outcome": "fail_open_error", "allowed": True, "error": e.response["Error"]["Code"]}
        return {"outcome": r.outcome, "allowed": r.allowed, "remaining": r.remaining, "retry_after_ms": r.retry_after_ms,
                "attempts": attempt + 1}
    return {"outcome": "denied_contention", "allowed": False, "retry_after_ms": bucket.contention_retry_after_ms(limits(a))}


def cmd_status(a: argparse.Namespace) -> dict[str, Any]:
    st = bucket.status(get(bucket.PREFIX + a.client), a.now_ms, limits(a))
    return {"tokens": st.tokens, "admit": st.admit, "retry_after_ms": st.retry_after_ms}


def keyring(secret_id: str) -> dict[str, bytes]:
    """AWSCURRENT and AWSPREVIOUS, read fresh (a verifier does this on an unknown kid)."""
    sm = boto3.client("secretsmanager", endpoint_url=os.environ["KOSHA_SECRETSMANAGER_ENDPOINT"])
    ring: dict[str, bytes] = {}
    for stage in ("AWSCURRENT", "AWSPREVIOUS"):
        try:
            out = sm.get_secret_value(SecretId=secret_id, VersionStage=stage)
        except ClientError as e:
            if e.response["Error"]["Code"] == "ResourceNotFoundException":
                continue
            raise
        raw = chaos.decode_key(out["SecretString"])
        ring[chaos.kid_of(raw)] = raw
    return ring


def cmd_verify(a: argparse.Namespace) -> dict[str, Any]:
    try:
        f = chaos.verify(a.value, keyring(a.secret_id), a.now)
    except chaos.Reject as r:
        return {"ok": False, "check": r.check, "field": r.field}
    return {"ok": True, "target": f.target, "fault": f.fault, "exp": f.exp}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("override")
    o.add_argument("--dependency", required=True)
    o.add_argument("--now-ms", type=int, required=True)
    g = sub.add_parser("get")
    g.add_argument("--pk", required=True)
    pi = sub.add_parser("put-item")
    pi.add_argument("--item", required=True)
    for name in ("take", "status"):
        t = sub.add_parser(name)
        t.add_argument("--client", required=True)
        t.add_argument("--now-ms", type=int, required=True)
        t.add_argument("--capacity", type=float, default=bucket.DEFAULT_CAPACITY)
        t.add_argument("--refill", type=float, default=bucket.DEFAULT_REFILL_PER_SECOND)
    v = sub.add_parser("verify")
    v.add_argument("--secret-id", required=True)
    v.add_argument("--now", type=float, required=True)
    v.add_argument("--value", required=True)
    a = p.parse_args(argv)
    out = {"override": cmd_override, "get": cmd_get, "put-item": cmd_put_item, "take": cmd_take, "status": cmd_status, "verify": cmd_verify}[a.cmd](a)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
