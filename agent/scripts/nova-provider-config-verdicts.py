#!/usr/bin/python3
"""Runs Nova's own provider config loader on every case of a corpus and prints
its verdicts as JSON (the golden fixtures of agent/test/provider-config-nova.test.ts).

    /usr/bin/python3 agent/scripts/nova-provider-config-verdicts.py \
        agent/test/fixtures/provider-config-corpus/cases > .../nova-verdicts.json

A case is a directory (a provider_config_location); Nova's
get_provider_configs() is called on it exactly as nova-compute calls it at
startup. Needs Debian's python3-yaml, python3-jsonschema,
python3-microversion-parse, python3-os-resource-classes, python3-os-traits and
Nova's nova/compute/provider_config.py (python3-nova; --nova-source or
$NOVA_PROVIDER_CONFIG). nova.exception and nova.i18n are replaced by the two
classes the loader uses, copied from nova/exception.py, so python3-nova's
dependencies need not be installed.
"""
import argparse
import importlib.util
import json
import logging
import math
import os
import sys
import types

DEFAULT_SOURCES = [
    os.environ.get('NOVA_PROVIDER_CONFIG', ''),
    '/usr/lib/python3/dist-packages/nova/compute/provider_config.py',
    '/tmp/debpl/n/usr/lib/python3/dist-packages/nova/compute/provider_config.py',
]


def _install_nova_shims():
    nova = types.ModuleType('nova')
    i18n = types.ModuleType('nova.i18n')
    i18n._ = lambda text: text
    exception = types.ModuleType('nova.exception')

    # Verbatim from nova/exception.py (26.2.2), less logging.
    class NovaException(Exception):
        msg_fmt = "An unknown exception occurred."
        code = 500
        headers = {}
        safe = False

        def __init__(self, message=None, **kwargs):
            self.kwargs = kwargs
            if 'code' not in self.kwargs:
                try:
                    self.kwargs['code'] = self.code
                except AttributeError:
                    pass
            try:
                if not message:
                    message = self.msg_fmt % kwargs
                else:
                    message = str(message)
            except Exception:
                message = self.msg_fmt
            self.message = message
            super(NovaException, self).__init__(message)

    class ProviderConfigException(NovaException):
        msg_fmt = ("An error occurred while processing "
                   "a provider config file: %(error)s")

    exception.NovaException = NovaException
    exception.ProviderConfigException = ProviderConfigException
    nova.exception = exception
    nova.i18n = i18n
    sys.modules.update({'nova': nova, 'nova.exception': exception, 'nova.i18n': i18n})


def load_nova_provider_config(source):
    _install_nova_shims()
    spec = importlib.util.spec_from_file_location('nova.compute.provider_config', source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain(value):
    """A JSON form of what the loader returned (only YAML's safe types occur)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return {'float': 'nan'}
        if math.isinf(value):
            return {'float': 'inf' if value > 0 else '-inf'}
        return value
    if isinstance(value, dict):
        return {'mapping': [[plain(k), plain(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return {type(value).__name__: repr(value)}


def normalise(provider_configs):
    """One record per provider, in Nova's order: what the resource tracker
    uses of each (inventories merged item by item, later items winning, as
    _merge_provider_configs does; traits as listed)."""
    out = []
    for key, provider in provider_configs.items():
        inventories = {}
        for item in provider.get('inventories', {}).get('additional', []):
            if isinstance(item, dict):
                for rc, inventory in item.items():
                    inventories[rc] = {field: plain(v) for field, v in inventory.items()}
        out.append({
            'id': key,
            'identification': {k: plain(v) for k, v in provider['identification'].items()},
            'source_file': provider['__source_file'],
            'inventories': inventories,
            'inventory_items': plain(provider.get('inventories', {}).get('additional', [])),
            'traits': plain(list(provider.get('traits', {}).get('additional', []))),
        })
    return out


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('cases', help='directory of case directories')
    parser.add_argument('--nova-source', default=next((p for p in DEFAULT_SOURCES if p and os.path.exists(p)), None))
    args = parser.parse_args()
    if not args.nova_source:
        sys.exit('Nova provider_config.py not found: apt-get download python3-nova && dpkg-deb -x python3-nova_*.deb n, '
                 'then --nova-source n/usr/lib/python3/dist-packages/nova/compute/provider_config.py')
    module = load_nova_provider_config(args.nova_source)
    collect = _Collect()
    logging.getLogger(module.__name__).addHandler(collect)
    logging.getLogger(module.__name__).propagate = False

    verdicts = {}
    for case in sorted(os.listdir(args.cases)):
        path = os.path.join(args.cases, case)
        if not os.path.isdir(path):
            continue
        collect.messages = []
        try:
            configs = module.get_provider_configs(path)
            verdict = {'accepted': True, 'providers': normalise(configs)}
        except Exception as exc:  # Nova lets more than ProviderConfigException escape
            message = str(exc).replace(os.path.abspath(args.cases) + os.sep, '').replace(args.cases.rstrip(os.sep) + os.sep, '')
            verdict = {'accepted': False, 'error_class': type(exc).__name__, 'message': message[:500]}
        verdict['warnings'] = [m.replace(args.cases.rstrip(os.sep) + os.sep, '') for m in collect.messages]
        verdicts[case] = verdict
    json.dump({'nova': args.nova_source.split('dist-packages/')[-1], 'cases': verdicts}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
