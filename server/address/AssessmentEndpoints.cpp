#include "AddressEndpoints.h"

#include "AddressAssessor.h"
#include "AddressCommon.h"

#include <QJsonArray>

// assessment (shape: resources/address/README.md).
namespace AddressEndpoints {

using namespace AddressCommon;

// {address_assessment: {code, findings: [{code, message, start?, end?}]}, status: "OK"}
Reply assessment(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const AddressAssessor::Assessment a = engine.assessor().assess(*text);
    QJsonArray findings;
    for (const AddressAssessor::Finding &f : a.findings) {
        QJsonObject o{{"code", f.code}, {"message", f.message}};
        if (f.start >= 0) {
            o.insert("start", charOffset(*text, f.start));
            o.insert("end", charOffset(*text, f.end));
        }
        findings.append(o);
    }
    return ok({{"address_assessment", QJsonObject{{"code", a.code}, {"findings", findings}}},
               {"status", "OK"}});
}

} // namespace AddressEndpoints
