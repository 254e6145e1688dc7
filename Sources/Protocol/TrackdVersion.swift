/// trackd's version, written here only. `trackd --version`, `trackctl --version` and each worker's HelloReply
/// (`serverVersion`, which `trackctl status` shows) carry it; the Makefile reads this line for `make deb`'s package
/// version, and `make deb` refuses a Python client whose `__version__` (clients/python/trackd/__init__.py) is not
/// the same. Digits, letters and `.+~-` only: it is also the Debian package's version.
public let trackdVersion = "0.1.0"
