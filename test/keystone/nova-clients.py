"""Nova's own clients (Debian's python3-nova) against placement-edge behind Keystone.

Usage: nova-clients.py NOVA_CONF INPUT_JSON
Reads nova.conf exactly as nova-compute would ([placement], [cyborg],
[service_user]) and, from INPUT_JSON, the provider to report and a user's
token with its catalog. Prints one JSON object with what Nova saw.
  - the report client (SchedulerReportClient, [placement] auth_type=password,
    endpoint from the catalog) creates a compute node provider, sets its
    inventory and reads the tree back;
  - the Cyborg client (nova/accelerator/cyborg.py) reads a device profile's
    groups, creates an ARQ and binds it with the user's token and, from
    [service_user], Nova's service token beside it.
"""
import json
import sys

from oslo_config import cfg

import nova.monkey_patch  # noqa: F401  (as every nova service does: without it, copying the report client's cached tree fails)
import nova.conf
from nova import context as nova_context
from nova.accelerator import cyborg
from nova.scheduler.client import report

CONF = nova.conf.CONF


def v2_catalog(catalog):
    """A token's v3 catalog in the v2 shape Nova's request context reads.

    keystonemiddleware hands Nova the catalog in X-Service-Catalog already in
    this shape (one entry per region, an URL per interface); the test reads
    the v3 token itself, so it converts as keystonemiddleware would.
    """
    converted = []
    for service in catalog:
        regions = {}
        for ep in service.get('endpoints', []):
            if 'interface' not in ep:
                regions.setdefault(ep.get('region'), {}).update(ep)
                continue
            entry = regions.setdefault(ep.get('region_id') or ep.get('region'),
                                       {'region': ep.get('region_id') or ep.get('region')})
            entry[ep['interface'] + 'URL'] = ep['url']
        converted.append({'type': service.get('type'), 'name': service.get('name'),
                          'endpoints': list(regions.values())})
    return converted


def main():
    conf_file, input_file = sys.argv[1], sys.argv[2]
    CONF([], project='nova', default_config_files=[conf_file])
    with open(input_file) as f:
        given = json.load(f)
    out = {}

    admin = nova_context.get_admin_context()
    client = report.SchedulerReportClient()
    rp_uuid, rp_name = given['provider_uuid'], given['provider_name']
    client.get_provider_tree_and_ensure_root(admin, rp_uuid, name=rp_name)
    client.set_inventory_for_provider(admin, rp_uuid, {
        'VCPU': {'total': 16, 'reserved': 0, 'min_unit': 1, 'max_unit': 16,
                 'step_size': 1, 'allocation_ratio': 4.0},
        'MEMORY_MB': {'total': 32768, 'reserved': 512, 'min_unit': 1,
                      'max_unit': 32768, 'step_size': 1,
                      'allocation_ratio': 1.0},
    })
    out['tree'] = [{'uuid': p['uuid'], 'name': p['name'],
                    'generation': p['generation']}
                   for p in client.get_providers_in_tree(admin, rp_uuid)]
    inv = client.get('/resource_providers/%s/inventories' % rp_uuid,
                     global_request_id=admin.global_id)
    out['inventory_status'] = inv.status_code
    out['inventory'] = sorted(inv.json()['inventories'].keys())

    if given.get('device_profile'):
        user = nova_context.RequestContext(
            user_id=given['user_id'], project_id=given['project_id'],
            auth_token=given['user_token'],
            service_catalog=v2_catalog(given['catalog']))
        cy = cyborg.get_client(user)
        out['dp_groups'] = cy.get_device_profile_groups(given['device_profile'])
        arqs = cy.create_arqs(given['device_profile'])
        out['arq_states'] = [a['state'] for a in arqs]
        cy.bind_arqs({a['uuid']: {
            'hostname': given['hostname'],
            'device_rp_uuid': given['device_rp_uuid'],
            'instance_uuid': given['instance_uuid'],
        } for a in arqs})
        out['bound_arqs'] = [a['uuid'] for a in arqs]
    print(json.dumps(out))


if __name__ == '__main__':
    try:
        main()
    except cfg.Error as err:
        print('configuration error: %s' % err, file=sys.stderr)
        sys.exit(2)
