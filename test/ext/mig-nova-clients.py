"""Nova's own clients (Debian's python3-nova) booting instances with a MIG profile device profile.

Usage: mig-nova-clients.py NOVA_CONF INPUT_JSON
Reads nova.conf as Nova's services would ([placement] with a token, [cyborg]
endpoint_override) and, from INPUT_JSON, the device profile, the flavor's
resources, the host name and how many instances to boot. Each boot is what
Nova does, through Nova's code:
  - the API: the device profile's request groups (cyborg.get_device_profile_request_groups);
  - the scheduler: ResourceRequest.from_request_spec (the flavor and those groups),
    SchedulerReportClient.get_allocation_candidates, and claim_resources of the
    first candidate (none: NoValidHost);
  - the conductor: create_arqs_and_match_resource_providers from the
    candidate's mappings, then bind_arqs.
Prints one JSON object: per boot, the device provider bound (or null).
"""
import json
import sys
import uuid

from oslo_config import cfg

import nova.monkey_patch  # noqa: F401  (as every nova service does)
import nova.conf
from nova import context as nova_context
from nova import objects
from nova.accelerator import cyborg
from nova.scheduler import utils as scheduler_utils
from nova.scheduler.client import report

CONF = nova.conf.CONF


def main():
    conf_file, input_file = sys.argv[1], sys.argv[2]
    CONF([], project='nova', default_config_files=[conf_file])
    objects.register_all()
    with open(input_file) as f:
        given = json.load(f)

    admin = nova_context.get_admin_context()
    # The user's request context: its token goes to Cyborg (no service token here).
    user = nova_context.RequestContext(
        user_id=given['user_id'], project_id=given['project_id'], auth_token=given['user_token'])
    placement = report.SchedulerReportClient()
    bound = []
    for _ in range(given['boots']):
        instance = str(uuid.uuid4())
        groups = cyborg.get_device_profile_request_groups(user, given['device_profile'])
        # The scheduler's request spec: the flavor (naming the device profile) and the profile's groups.
        spec = objects.RequestSpec(
            flavor=objects.Flavor(
                vcpus=given['flavor']['VCPU'], memory_mb=given['flavor']['MEMORY_MB'], root_gb=0,
                ephemeral_gb=0, swap=0, extra_specs={'accel:device_profile': given['device_profile']}),
            image=objects.ImageMeta(properties=objects.ImageMetaProps()),
            requested_resources=groups, is_bfv=False)
        request = scheduler_utils.ResourceRequest.from_request_spec(spec)
        alloc_reqs, _summaries, version = placement.get_allocation_candidates(admin, request)
        if not alloc_reqs:
            bound.append(None)  # NoValidHost
            continue
        chosen = alloc_reqs[0]
        if not placement.claim_resources(admin, instance, chosen, given['project_id'], given['user_id'],
                                         allocation_request_version=version):
            bound.append('claim refused')
            continue
        cy = cyborg.get_client(user)
        arqs = cy.create_arqs_and_match_resource_providers(given['device_profile'], chosen['mappings'])
        cy.bind_arqs({a['uuid']: {
            'hostname': given['hostname'],
            'device_rp_uuid': a['device_rp_uuid'],
            'instance_uuid': instance,
        } for a in arqs})
        bound.append(arqs[0]['device_rp_uuid'])
    print(json.dumps({'bound': bound, 'query': request.to_querystring()}))


if __name__ == '__main__':
    try:
        main()
    except cfg.Error as err:
        print('configuration error: %s' % err, file=sys.stderr)
        sys.exit(2)
