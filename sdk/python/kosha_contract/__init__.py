"""kosha_contract: what a Python data plane needs of koshactl's contracts.

Pure functions, standard library only, for Python 3.11+. Nothing here does
I/O: the caller reads items with its own DynamoDB client (boto3, aioboto3,
aiobotocore) and passes them in DynamoDB JSON, the shape GetItem returns
({"S": ...}, {"N": ...}); what to write comes back in the same shape. So
every function is safe to call from async code.

Modules, one per contract in docs/contracts:

- override:  the breaker#<dependency> item and the rule the data plane applies
- bucket:    the rl#<client> item, the refill math and the race-free take
- chaos:     the X-Kosha-Chaos header: parse, verify, sign, key ids
- freeze:    the freeze#fleet item and its rule on chaos headers
- gauge:     the breaker_state gauge: EMF lines, state names and values
- degradation: the degradation matrix: what each dependency being down does to
               the tools, how a client reads an answer, forcing several at once

docs/contracts/vectors/*.json hold the cases every implementation must
pass; sdk/python/tests runs them against this package.
"""

from . import bucket, chaos, degradation, freeze, gauge, override

__all__ = ["bucket", "chaos", "degradation", "freeze", "gauge", "override"]
