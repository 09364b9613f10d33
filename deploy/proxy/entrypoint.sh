#!/bin/sh
# Start nginx with this deployment's settings (docs/deploy.md):
#   PROFORMA_DOMAIN      the public host name (certificate and server_name)
#   PROFORMA_UPLOAD_MAX  nginx's body cap, at least the service's PROFORMA_UPLOAD_MAX_BYTES
#   PROFORMA_UPSTREAM    the service, host:port on the compose network
# The certificate is /etc/proforma/tls/fullchain.pem with privkey.pem (the `tls` volume):
# put your CA's there (docs/deploy.md); when none is there a self-signed one is made, so
# that a first start and the compose check run over HTTPS.
set -eu
DOMAIN="${PROFORMA_DOMAIN:-localhost}"
TLS=/etc/proforma/tls
case "$DOMAIN" in
  *[!A-Za-z0-9.-]*|"") echo "PROFORMA_DOMAIN='$DOMAIN' is not a host name" >&2; exit 2 ;;
esac
if [ ! -s "$TLS/fullchain.pem" ] || [ ! -s "$TLS/privkey.pem" ]; then
  echo "no certificate in $TLS: making a self-signed one for $DOMAIN (replace it: docs/deploy.md)" >&2
  openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=$DOMAIN" \
    -addext "subjectAltName=DNS:$DOMAIN,DNS:localhost,IP:127.0.0.1" \
    -keyout "$TLS/privkey.pem" -out "$TLS/fullchain.pem" 2>/dev/null
  chmod 0600 "$TLS/privkey.pem"
fi
sed -e "s|@DOMAIN@|$DOMAIN|g" \
    -e "s|@UPLOAD_MAX@|${PROFORMA_UPLOAD_MAX:-2g}|g" \
    -e "s|@UPSTREAM@|${PROFORMA_UPSTREAM:-proforma:8000}|g" \
    /etc/proforma/nginx.conf.in > /etc/nginx/conf.d/proforma.conf
nginx -t -q
exec nginx -g 'daemon off;'
