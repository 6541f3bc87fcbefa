// Package pyinterop holds the end-to-end test of the Python reference data
// plane (sdk/python/kosha_contract) against koshactl: koshactl runs in
// process on a fake clock, the Python peer (sdk/python/tests/interop/peer.py)
// runs under Debian's /usr/bin/python3 with boto3, and both use the same
// moto table and Secrets Manager fake. It has no code outside its tests.
package pyinterop
