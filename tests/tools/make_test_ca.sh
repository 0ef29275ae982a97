#!/usr/bin/env bash
# Makes a throw-away CA and a server certificate signed by it, for the net.fetch tests
# and benchmark (nothing is kept: the caller's directory is removed after the run).
#
#   tests/tools/make_test_ca.sh DIR
#
# Writes DIR/ca.pem (the CA's certificate), DIR/server.pem and DIR/server.key (a
# certificate for *.basal.test, basal.test, localhost and 127.0.0.1). EC P-256 keys,
# valid one day.
set -euo pipefail
dir=$1
cd "$dir"
openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
openssl req -x509 -new -key ca.key -sha256 -days 1 -subj "/CN=basal test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
  -out ca.pem 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out server.key 2>/dev/null
openssl req -new -key server.key -subj "/CN=basal.test" -out server.csr 2>/dev/null
printf '%s\n' "subjectAltName=DNS:*.basal.test,DNS:basal.test,DNS:localhost,IP:127.0.0.1" \
  "basicConstraints=CA:FALSE" "extendedKeyUsage=serverAuth" > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -sha256 \
  -extfile server.ext -out server.pem 2>/dev/null
rm -f server.csr server.ext ca.srl
