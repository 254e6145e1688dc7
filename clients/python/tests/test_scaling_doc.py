"""docs/SCALING.md: its Kubernetes manifest parses (PyYAML) and says what the doc says (a DaemonSet running
trackd on a hostPath socket that the reader pod mounts), and its systemd unit passes `systemd-analyze verify`
together with the repository's trackd.socket and trackd.service."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from support import BUILD, REPO

DOC = os.path.join(REPO, 'docs', 'SCALING.md')

try:
    import yaml
except ImportError:  # make test's venv has PyYAML (requirements-test.txt)
    yaml = None


def blocks(language):
    with open(DOC, encoding='utf-8') as f:
        return re.findall(r'```%s\n(.*?)```' % language, f.read(), re.S)


class ManifestTests(unittest.TestCase):
    def setUp(self):
        if yaml is None:
            self.skipTest('PyYAML is not installed (make test installs it into the test venv)')
        (text,) = blocks('yaml')
        self.docs = list(yaml.safe_load_all(text))

    def test_daemonset_and_reader_share_the_socket(self):
        kinds = {d['kind']: d for d in self.docs}
        self.assertEqual(sorted(kinds), ['DaemonSet', 'Pod'])
        daemonset, reader = kinds['DaemonSet'], kinds['Pod']
        self.assertEqual(daemonset['apiVersion'], 'apps/v1')
        spec = daemonset['spec']
        self.assertEqual(spec['selector']['matchLabels'], spec['template']['metadata']['labels'])
        pod = spec['template']['spec']
        (trackd,) = pod['containers']
        command = trackd['command']
        self.assertEqual(command[:3], ['/usr/bin/trackd', '--socket', '/run/trackd/trackd.sock'])
        self.assertEqual(trackd['securityContext']['capabilities']['drop'], ['ALL'])
        self.assertFalse(trackd['securityContext']['allowPrivilegeEscalation'])
        # Every option the manifest passes is one trackd has.
        trackd_binary = os.path.join(BUILD, 'trackd')
        run = subprocess.run([trackd_binary, '--help'], capture_output=True, text=True)
        help_text = run.stdout + run.stderr
        for option in (a for a in command[1:] if a.startswith('--')):
            self.assertIn(option, help_text)

        def host_dir(pod_spec, container):
            mounts = {m['name']: m['mountPath'] for m in container['volumeMounts']}
            volumes = {v['name']: v for v in pod_spec['volumes']}
            return {volumes[n]['hostPath']['path']: path for n, path in mounts.items()
                    if 'hostPath' in volumes[n]}

        self.assertEqual(host_dir(pod, trackd), {'/run/trackd': '/run/trackd'})
        (reader_container,) = reader['spec']['containers']
        self.assertEqual(host_dir(reader['spec'], reader_container), {'/run/trackd': '/run/trackd'})
        env = {e['name']: e['value'] for e in reader_container['env']}
        self.assertEqual(env['TRACKD_SOCKET'], '/run/trackd/trackd.sock')
        # Same uid on both sides: the socket's permissions let the reader in.
        self.assertEqual(pod['securityContext']['runAsUser'], reader['spec']['securityContext']['runAsUser'])


class UnitTests(unittest.TestCase):
    def test_systemd_analyze_verify(self):
        if shutil.which('systemd-analyze') is None:
            self.fail('systemd-analyze is missing (Debian package systemd, a make deps test dependency)')
        units = blocks('ini')
        self.assertEqual(len(units), 1)
        name = units[0].splitlines()[0].lstrip('# ').rsplit('/', 1)[1]
        self.assertEqual(name, 'ray-node.service')
        work = tempfile.mkdtemp(prefix='trackd-scaling-')
        try:
            # verify wants every ExecStart/ExecStop binary to exist: copies run /bin/true (as verify-units.sh).
            texts = [(name, units[0])]
            for n in ('trackd.socket', 'trackd.service'):
                with open(os.path.join(REPO, 'systemd', n), encoding='utf-8') as f:
                    texts.append((n, f.read()))
            for unit_name, text in texts:
                text = re.sub(r'^(Exec\w+)=\S+', r'\1=/bin/true', text, flags=re.M)
                with open(os.path.join(work, unit_name), 'w', encoding='utf-8') as f:
                    f.write(text)
            result = subprocess.run(['systemd-analyze', 'verify', '--man=no', name, 'trackd.socket',
                                     'trackd.service'], cwd=work, capture_output=True, text=True,
                                    env=dict(os.environ, SYSTEMD_LOG_COLOR='0'))
            output = result.stdout + result.stderr
            self.assertEqual(result.returncode, 0, output)
            self.assertNotIn('ray-node', output)
            self.assertNotIn('trackd.', output)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    unittest.main()
