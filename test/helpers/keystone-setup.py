"""keystone-manage db_sync, fernet_setup, credential_setup and bootstrap in one
Python process (test/helpers/keystone.ts): each keystone-manage run spends
seconds importing Keystone, four of them over a minute on a loaded machine.

Usage: keystone-setup.py KEYSTONE_CONF USER GROUP ADMIN_PASSWORD IDENTITY_URL
"""
import sys

from keystone.cmd import cli
from keystone.conf import CONF

conf, user, group, password, url = sys.argv[1:6]
owner = ['--keystone-user', user, '--keystone-group', group]
steps = [
    ['db_sync'],
    ['fernet_setup'] + owner,
    ['credential_setup'] + owner,
    ['bootstrap', '--bootstrap-password', password,
     '--bootstrap-region-id', 'RegionOne',
     '--bootstrap-admin-url', url,
     '--bootstrap-internal-url', url,
     '--bootstrap-public-url', url],
]
for step in steps:
    # cli.main() registers its sub-command option and parses the command line each time.
    CONF.reset()
    CONF.unregister_opt(cli.command_opt)
    try:
        cli.main(argv=['keystone-manage', '--config-file', conf] + step)
    except SystemExit as exit:
        if exit.code:
            raise

# Write-ahead logging: in sqlite's default journal mode a connection Keystone
# leaves open for reading blocks the next write ("database is locked", an
# empty 500 after 5 s, seen on every role and endpoint create).
import sqlite3  # noqa: E402

connection = CONF.database.connection
database = sqlite3.connect(connection[len('sqlite:///'):])
database.execute('PRAGMA journal_mode=WAL')
database.close()
