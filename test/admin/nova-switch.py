"""Nova's report client (python3-nova) across a switch of Placement.

Caches the provider tree of a compute node and a consumer's allocations from
the old Placement (argv[1]), then points the same client at the new one
(argv[2]) and carries on with what it cached: inventory, traits and
aggregates written with the cached provider generations, allocations with
the cached consumer generation. Prints one JSON object; any refusal raises.
argv[3]: JSON {"compute": uuid, "child": uuid, "consumer": uuid}.
"""
import json
import sys

# As every nova service starts (nova/cmd/__init__.py): eventlet's patching,
# which also makes the report client's cached ProviderTree copyable.
import nova.monkey_patch  # noqa: F401

from keystoneauth1 import adapter, session, token_endpoint
from nova import context as nova_context
from nova.scheduler.client import report

old_url, new_url, ids = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
auth = token_endpoint.Token(old_url, 'admin')
client_adapter = adapter.Adapter(session.Session(auth=auth), service_type='placement', endpoint_override=old_url, raise_exc=False)
rc = report.SchedulerReportClient(adapter=client_adapter)
ctx = nova_context.get_admin_context()

# Before the switch: what nova-compute holds in its cache.
rc.get_provider_tree_and_ensure_root(ctx, ids['compute'])
tree = rc._provider_tree
cached = {u: tree.data(u).generation for u in (ids['compute'], ids['child'])}
inventory = dict(tree.data(ids['compute']).inventory)
allocs = rc.get_allocs_for_consumer(ctx, ids['consumer'])

# The switch: the catalog now names the new service; the cache stays.
client_adapter.endpoint_override = new_url
auth.endpoint = new_url

inventory['MEMORY_MB'] = dict(inventory['MEMORY_MB'], total=inventory['MEMORY_MB']['total'] + 1024)
rc.set_inventory_for_provider(ctx, ids['compute'], inventory)
rc.set_traits_for_provider(ctx, ids['child'], sorted(tree.data(ids['child']).traits | {'CUSTOM_AFTER_SWITCH'}))
rc.set_aggregates_for_provider(ctx, ids['compute'], sorted(tree.data(ids['compute']).aggregates | {'7b1c1b0e-0000-4000-8000-00000000a5a5'}))

payload = {
    'allocations': {rp: {'resources': dict(a['resources'])} for rp, a in allocs['allocations'].items()},
    'consumer_generation': allocs['consumer_generation'],
    'project_id': allocs['project_id'],
    'user_id': allocs['user_id'],
}
# One more VCPU where the consumer holds VCPU (a resize).
vcpu_rp = next(rp for rp, a in sorted(payload['allocations'].items()) if 'VCPU' in a['resources'])
payload['allocations'][vcpu_rp]['resources']['VCPU'] += 1
if not rc.put_allocations(ctx, ids['consumer'], payload):
    raise SystemExit('put_allocations with the cached consumer generation was refused')

after = rc.get_allocs_for_consumer(ctx, ids['consumer'])
print(json.dumps({
    'cached_generations': cached,
    'cached_consumer_generation': allocs['consumer_generation'],
    'generations_after': {u: tree.data(u).generation for u in (ids['compute'], ids['child'])},
    'consumer_generation_after': after['consumer_generation'],
    'memory_total_after': inventory['MEMORY_MB']['total'],
}))
