#include "PanelRegistry.h"

void PanelRegistry::add(const QString &family, PanelSpec panel)
{
    m_panels[family].append(std::move(panel));
}
