# moto's server as moto_server runs it (moto.server.main), with one change:
# requests are served one at a time. moto 5's TransactWriteItems is not
# safe under concurrent requests (it deep-copies the tables while another
# request changes them: HTTP 500, "dictionary changed size during
# iteration", and no isolation between two transactions on one item),
# where DynamoDB applies each transaction atomically. Serving requests in
# turn gives the tests what DynamoDB guarantees. The threaded server keeps
# HTTP/1.1 connections; only the application call holds the lock.
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

app = DomainDispatcherApplication(create_backend_app)
app.debug = True
lock = threading.Lock()


def serialized(environ, start_response):
    with lock:
        return list(app(environ, start_response))


run_simple(sys.argv[1], int(sys.argv[2]), serialized, threaded=True)
