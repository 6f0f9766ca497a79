#!/usr/bin/env bash
# Makes .deps/: headers of the -dev packages the GPU machine lacks (SQLite, OpenSSL, libcurl, libseccomp,
# cpp-httplib with its library, which Ubuntu's runtime packages lack; also
# nlohmann-json, CLI11, fmt and GoogleTest in case), from Debian's packages, for the
# device tool to carry (`carry: [".deps"]`). scripts/gpu/device.sh uses them there.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .deps && mkdir -p .deps/pkgs
(cd .deps/pkgs && apt-get download libsqlite3-dev libssl-dev libcurl4-openssl-dev nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libseccomp-dev \
  libcpp-httplib-dev libcpp-httplib0.11 >/dev/null)
for f in .deps/pkgs/*.deb; do dpkg -x "$f" .deps/root; done
mkdir -p .deps/usr/include .deps/gtest
cp -r .deps/root/usr/include/. .deps/usr/include/
cp -r .deps/root/usr/include/x86_64-linux-gnu/openssl/. .deps/usr/include/openssl/ 2>/dev/null || true
mkdir -p .deps/usr/include/curl && cp -r .deps/root/usr/include/x86_64-linux-gnu/curl/. .deps/usr/include/curl/ 2>/dev/null || true
cp .deps/root/usr/lib/x86_64-linux-gnu/libgtest*.a .deps/root/usr/lib/x86_64-linux-gnu/libgmock*.a .deps/gtest/ 2>/dev/null || true
mkdir -p .deps/usr/lib && cp -L .deps/root/usr/lib/x86_64-linux-gnu/libcpp-httplib.so* .deps/usr/lib/  # files, not links, for the carry
rm -rf .deps/pkgs .deps/root
du -sh .deps
