// The API server's request path without services (ApiServer::ServeBytes): what is refused
// before any route reads the request (issue 56), and that every refusal is the JSON error shape.
#include "api/server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "api/routes.h"
#include "api/tokens.h"

namespace trigd {
namespace {

class ApiServerBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/trigd-api-server-testXXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    const std::string tokens =
        R"([{"sha256": ")" + Sha256Hex("admin-token") + R"(", "role": "admin", "namespaces": ["*"]}])";
    ASSERT_EQ(write(fd, tokens.data(), tokens.size()), static_cast<ssize_t>(tokens.size()));
    close(fd);
    tokens_file_ = path;
    ApiOptions options;
    options.listen = "127.0.0.1:0";
    options.tokens_file = tokens_file_;
    options.pg = "host=/nonexistent-trigd-test";
    options.share = 1.0;
    ASSERT_TRUE(server_.Prepare(options, api_routes::Routes()).ok());
  }
  void TearDown() override { unlink(tokens_file_.c_str()); }

  std::string Serve(const std::string& bytes) { return server_.ServeBytes(bytes); }
  static std::string Status(const std::string& response) {
    return response.rfind("HTTP/1.1 ", 0) == 0 ? response.substr(9, 3) : "none: " + response;
  }

  ApiServer server_;
  std::string tokens_file_;
};

constexpr const char* kAuth = "Authorization: Bearer admin-token\r\n";

TEST_F(ApiServerBytesTest, InvalidUtf8OrNulAnywhereIsRefusedWith400WithOrWithoutAToken) {
  for (const std::string auth : {"", kAuth}) {
    for (const std::string line :
         {"GET /%ff HTTP/1.1", "GET /api/v1/%ff HTTP/1.1", "GET /\xff HTTP/1.1", "GET /%c0%ae%c0%ae/README.md HTTP/1.1",
          "GET /api/v1/runs/%ff HTTP/1.1", "GET /api/v1/whoami?x=%ff HTTP/1.1", "GET /app.js%00.html HTTP/1.1",
          "GET /api/v1/runs?schedule=a%00b HTTP/1.1"}) {
      const std::string out = Serve(line + "\r\n" + auth + "\r\n");
      EXPECT_EQ(Status(out), "400") << line << ": " << out;
      EXPECT_NE(out.find("\"problems\""), std::string::npos) << out;
    }
    EXPECT_EQ(Status(Serve("GET /api/v1/whoami HTTP/1.1\r\nX-A: \xff\r\n" + auth + "\r\n")), "400");
  }
}

TEST_F(ApiServerBytesTest, UndeclaredAndUnknownMethodsAre405WithAllow) {
  std::string out = Serve("TRACE /api/v1/whoami HTTP/1.1\r\n\r\n");
  EXPECT_EQ(Status(out), "405") << out;
  EXPECT_NE(out.find("Allow: GET, HEAD\r\n"), std::string::npos) << out;
  out = Serve("QUERY /api/v1/runs/x/cancel HTTP/1.1\r\n\r\n");
  EXPECT_EQ(Status(out), "405") << out;
  EXPECT_NE(out.find("Allow: POST\r\n"), std::string::npos) << out;
  EXPECT_EQ(Status(Serve("POST /index.html HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")), "405");
  EXPECT_EQ(Status(Serve("GET /api/v1/nothing HTTP/1.1\r\n\r\n")), "404");
}

TEST_F(ApiServerBytesTest, NoAuthorizationIs401BeforeTheBodyIsRead) {
  std::string out = Serve("PUT /api/v1/schedules/a/b HTTP/1.1\r\nContent-Length: 1\r\n\r\n{");
  EXPECT_EQ(Status(out), "401") << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos) << out;
}

TEST_F(ApiServerBytesTest, AFormContentTypeBodyIsReadAsBytesAtAnySizeUpToTheLimit) {
  const std::string doc = R"({"namespace": "a", "name": "other", "program": {"name": "p", "args": {"x": ")" +
                          std::string(9000, 'x') + R"("}}, "trigger": {"time": {"cron": "0 * * * *"}}})";
  const std::string out =
      Serve(std::string("PUT /api/v1/schedules/a/b HTTP/1.1\r\n") + kAuth +
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: " + std::to_string(doc.size()) +
            "\r\n\r\n" + doc);
  // Read and parsed: refused for its name, not for its size.
  EXPECT_EQ(Status(out), "400") << out;
  EXPECT_NE(out.find("the document names a/other"), std::string::npos) << out;
}

TEST_F(ApiServerBytesTest, AHeadOverItsLimitOrAGetWithABodyIsRefused) {
  EXPECT_EQ(Status(Serve("GET /api/v1/whoami HTTP/1.1\r\nX-Long: " + std::string(kApiMaxHeadBytes, 'a') + "\r\n\r\n")),
            "400");
  EXPECT_EQ(Status(Serve(std::string("GET /api/v1/whoami HTTP/1.1\r\n") + kAuth + "Content-Length: 3\r\n\r\nabc")),
            "400");
  EXPECT_EQ(Status(Serve(std::string("POST /api/v1/schedules HTTP/1.1\r\n") + kAuth +
                         "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 4\r\n\r\n--b\n")),
            "415");
}

TEST_F(ApiServerBytesTest, AnUnreadBodyIsNotTakenForTheNextRequest) {
  // Refused by name before its body is read; the body holds what would be a second request.
  const std::string hidden = "GET /api/v1/whoami HTTP/1.1\r\n" + std::string(kAuth) + "\r\n";
  const std::string out = Serve(std::string("POST /api/v1/schedules/a/..%20/start HTTP/1.1\r\n") + kAuth +
                                "Content-Length: " + std::to_string(hidden.size()) + "\r\n\r\n" + hidden);
  EXPECT_EQ(Status(out), "400") << out;
  EXPECT_EQ(out.find("HTTP/1.1 200"), std::string::npos) << out;
}

TEST_F(ApiServerBytesTest, WhoamiAnswersWithAToken) {
  const std::string out = Serve(std::string("GET /api/v1/whoami HTTP/1.1\r\n") + kAuth + "\r\n");
  EXPECT_EQ(Status(out), "200") << out;
  EXPECT_NE(out.find("\"role\":\"admin\""), std::string::npos) << out;
}

}  // namespace
}  // namespace trigd
