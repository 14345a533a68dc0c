"""Keystone's public WSGI application (as /usr/bin/keystone-wsgi-public builds
it) issuing tokens of a different life on each port uwsgi listens on: one
Keystone process shared by the test files of a run (test/helpers/keystone.ts,
sharedKeystone), each file on the port whose `[token] expiration` it needs.

KEYSTONE_TOKEN_LIVES maps each port to its token life in seconds, e.g.
{"40001": 3600, "40002": 24}. uwsgi runs one process with one thread, so the
override set for a request holds for exactly that request. A token carries its
expiry inside it (fernet), so any port validates any token by its own life.
"""
import json
import os

from keystone.conf import CONF
from keystone.server.wsgi import initialize_public_application

LIVES = {port: int(seconds) for port, seconds in json.loads(os.environ['KEYSTONE_TOKEN_LIVES']).items()}
keystone = initialize_public_application()


def application(environ, start_response):
    # SERVER_PORT is the port of the socket the request came in on (not the Host header's).
    CONF.set_override('expiration', LIVES[environ['SERVER_PORT']], group='token')
    return keystone(environ, start_response)
