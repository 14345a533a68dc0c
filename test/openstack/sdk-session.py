"""One openstacksdk session for test/openstack/ (Debian's python3-openstacksdk):
the tests drive the cloud as a user's script would, through the SDK's compute
proxy, in one Python process (an `openstack` CLI process per step spends
seconds importing and logging in each time).

Reads one JSON request a line on stdin, answers one JSON line on stdout:
  {"op": "compute", "method": "resize_server", "args": [...], "kwargs": {...}}
      -> {"result": ...}  (a resource as its dict, a list or generator as a list)
  {"op": "create_many", "count": N, "kwargs": {...}}
      -> N create_server calls at once, from N threads: {"result": [server ...]}
  {"op": "wait", "server": ID, "status": S, "timeout": T}
      -> waits until the server has status S (or ERROR, or T seconds); an ERROR
         server comes with Nova's fault
  {"op": "action", "server": ID, "body": {...}}
      -> POST /servers/ID/action at microversion 2.90
  {"op": "wait_task", "server": ID, "timeout": T}
      -> waits until the server has no task_state
  {"op": "wait_delete", "server": ID, "timeout": T}
A failure answers {"error": "..."}. Credentials: the OS_* environment.
"""
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import openstack
from openstack import resource

conn = openstack.connect()
# The Nova 26 API's newest microversion: live migration without block_migration
# questions, server create with networks 'none', host and flavor in the server.
conn.compute.default_microversion = '2.90'


def plain(value):
    if isinstance(value, resource.Resource):
        return value.to_dict(computed=False)
    if isinstance(value, (list, tuple)) or hasattr(value, '__next__'):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def server(id):
    return conn.compute.get_server(id)


def with_fault(s):
    """The server as a dict, with Nova's `fault` (which this SDK's Server leaves out)."""
    d = plain(s)
    if s.status == 'ERROR':
        # Nova writes the fault just after the ERROR state (a server buried in cell0): a moment's wait.
        for _ in range(60):
            raw = conn.compute.get('/servers/%s' % s.id, microversion='2.90').json()['server']
            d['fault'] = raw.get('fault')
            if d['fault']:
                break
            time.sleep(0.5)
    return d


def wait(id, status, timeout):
    deadline = time.time() + timeout
    while True:
        s = server(id)
        if s.status == status and not s.task_state:
            return s
        if s.status == 'ERROR' and status != 'ERROR':
            return s
        if time.time() > deadline:
            raise TimeoutError('server %s still %s/%s after %s s, not %s' % (id, s.status, s.task_state, timeout, status))
        time.sleep(0.5)


def wait_task(id, timeout):
    deadline = time.time() + timeout
    while True:
        s = server(id)
        if not s.task_state:
            return s
        if time.time() > deadline:
            raise TimeoutError('server %s still in task %s after %s s' % (id, s.task_state, timeout))
        time.sleep(0.5)


def wait_delete(id, timeout):
    deadline = time.time() + timeout
    while True:
        s = conn.compute.find_server(id, ignore_missing=True)
        if s is None:
            return None
        if time.time() > deadline:
            raise TimeoutError('server %s still %s after %s s' % (id, s.status, timeout))
        time.sleep(0.5)


def handle(req):
    op = req['op']
    if op == 'compute':
        return getattr(conn.compute, req['method'])(*req.get('args', []), **req.get('kwargs', {}))
    if op == 'create_many':
        with ThreadPoolExecutor(max_workers=req['count']) as pool:
            futures = [pool.submit(conn.compute.create_server, **dict(req['kwargs'], name='%s-%d' % (req['kwargs']['name'], i)))
                       for i in range(req['count'])]
            return [f.result() for f in futures]
    if op == 'wait':
        return with_fault(wait(req['server'], req['status'], req.get('timeout', 300)))
    if op == 'action':
        # A server action at the newest microversion (the SDK's evacuate sends none, and
        # 2.1 wants onSharedStorage).
        res = conn.compute.post('/servers/%s/action' % req['server'], json=req['body'], microversion='2.90')
        if res.status_code >= 400:
            raise RuntimeError('%s: %s %s' % (req['body'], res.status_code, res.text))
        return res.json() if res.content else None
    if op == 'wait_task':
        return wait_task(req['server'], req.get('timeout', 300))
    if op == 'wait_delete':
        return wait_delete(req['server'], req.get('timeout', 300))
    raise ValueError('unknown op %s' % op)


for line in sys.stdin:
    req = json.loads(line)
    try:
        answer = {'result': plain(handle(req))}
    except Exception as err:  # noqa: BLE001 - every failure goes back to the test
        answer = {'error': '%s: %s' % (type(err).__name__, err)}
    sys.stdout.write(json.dumps(answer, default=str) + '\n')
    sys.stdout.flush()
