// The audio family's panel: the speech and transcription playground on the family's engines.
#include "AudioFamily.h"
#include "AudioPanel.h"
#include "PanelRegistry.h"

void addPanels_audio(PanelRegistry &registry)
{
    registry.add(
        QStringLiteral("audio"),
        {QObject::tr("Tools"), 310, QObject::tr("Speech & transcription"),
         [](const PanelHost &host) { return new AudioPanel(host.familyAs<AudioFamily>()); }});
}
