#include "watch/http_error.h"

#include <fmt/format.h>

namespace ww::watch {

std::string DescribeHttpError(httplib::Error error, double read_timeout_s) {
  std::string words;
  switch (error) {
    case httplib::Error::Connection:
      words = "cannot connect (refused, unreachable, or nothing listens there)";
      break;
    case httplib::Error::ConnectionTimeout:
      words = "no connection within the connect timeout";
      break;
    case httplib::Error::Read:
      words = fmt::format("connected, but no answer within {:g} s, or the connection dropped",
                          read_timeout_s);
      break;
    case httplib::Error::Write:
      words = "connected, but the request could not be sent";
      break;
    case httplib::Error::BindIPAddress:
      words = "cannot bind the local address";
      break;
    case httplib::Error::SSLConnection:
      words = "TLS handshake failed";
      break;
    case httplib::Error::SSLLoadingCerts:
      words = "cannot load the CA certificates";
      break;
    case httplib::Error::SSLServerVerification:
      words = "the server's TLS certificate does not verify";
      break;
    case httplib::Error::ExceedRedirectCount:
      words = "too many redirects";
      break;
    case httplib::Error::Canceled:
      words = "canceled";
      break;
    case httplib::Error::Compression:
      words = "cannot decompress the answer";
      break;
    default:
      words = "request failed";
  }
  return fmt::format("{} [{}]", words, httplib::to_string(error));
}

}  // namespace ww::watch
